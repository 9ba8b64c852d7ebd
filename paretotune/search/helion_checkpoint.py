"""The helion engine's checkpoint rows: compact, because the loop spaces out saves that take 50 ms or more on GPU
campaigns, and a resume after a skipped save restarts the engine.

A config is (layout index, values in that layout's key order), an ACF an index into one table of base64 strings
(index 0: no ACF), a score a list of floats, ``None`` (failed) or ``"pending"`` (handed out, not told yet).
"""
from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from paretotune.search.helion_round import PENDING

STATE_VERSION = 2


def encode_score(score: Any) -> Any:
    if score is PENDING:
        return "pending"
    return None if score is None else list(score)


def decode_score(value: Any) -> Any:
    if value == "pending":
        return PENDING
    return None if value is None else tuple(float(v) for v in value)


class Codec:
    """Configs as value rows under shared key layouts, ACFs once each."""

    def __init__(self) -> None:
        self.layouts: list[list[str]] = []
        self._layout_ids: dict[tuple[str, ...], int] = {}
        self.acfs: list[bytes | None] = [None]
        self._acf_ids: dict[bytes | None, int] = {None: 0}

    def acf(self, data: bytes | None) -> int:
        if data not in self._acf_ids:
            self._acf_ids[data] = len(self.acfs)
            self.acfs.append(data)
        return self._acf_ids[data]

    def point(self, config: Mapping[str, Any], acf: bytes | None) -> list[Any]:
        keys = tuple(config)
        if keys not in self._layout_ids:
            self._layout_ids[keys] = len(self.layouts)
            self.layouts.append(list(keys))
        return [self._layout_ids[keys], [config[k] for k in keys], self.acf(acf)]

    def config(self, layout: int, values: list[Any]) -> dict[str, Any]:
        return dict(zip(self.layouts[layout], values, strict=True))

    def tables(self) -> dict[str, Any]:
        return {"layouts": self.layouts,
                "acf_table": [None if a is None else base64.b64encode(a).decode() for a in self.acfs]}

    @classmethod
    def from_tables(cls, state: Mapping[str, Any]) -> Codec:
        codec = cls()
        codec.layouts = [list(k) for k in state["layouts"]]
        codec.acfs = [None if a is None else base64.b64decode(a) for a in state["acf_table"]]
        return codec
