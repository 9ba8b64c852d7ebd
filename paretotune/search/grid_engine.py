"""Exhaustive grid: every point of a finite space once, in a fixed order, then nothing more.

The order is ``itertools.product`` over the knobs in the space's order, with the ACF choice varying fastest
(option 0, no ACF, first), so a budget smaller than the grid still sees every ACF on the first configs. When
the grid is exhausted ``ask`` returns ``[]`` and the campaign ends early. A generated ACF space is unbounded
and cannot be enumerated.
"""
from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

from paretotune.errors import UserError
from paretotune.search.base import EngineOptions, Proposal
from paretotune.search.catalog import EngineInfo, register
from paretotune.search.space import SearchSpace
from paretotune.store.atomic import atomic_write_json


class GridEngine:
    def __init__(self, space: SearchSpace, *, pool_size: int) -> None:
        if space.acf == "generated":
            raise UserError("search.engine: grid needs a finite space (kernel knobs and acf.files/acf.pack or no "
                            "ACF); generated ACFs are unbounded: use compileiq or random")
        self.space, self.pool_size = space, pool_size
        self._position = 0
        self._points = self._enumerate()

    def _enumerate(self) -> Iterator[Proposal]:
        free = self.space.free
        options = self.space.acf_options if self.space.acf == "finite" else ()
        acfs = [o.data for o in options] or [None]
        for i, (values, acf) in enumerate(itertools.product(itertools.product(*free.values()), acfs)):
            yield Proposal(engine_id=f"g{i}", config=self.space.config(dict(zip(free, values, strict=True))),
                           acf=acf)

    def ask(self) -> list[Proposal]:
        batch = list(itertools.islice(self._points, self.pool_size))
        self._position += len(batch)
        return batch

    def tell(self, scores: dict[str, tuple[float, ...] | None]) -> None:
        """The grid's order does not depend on scores."""

    def save(self, path: str) -> bool:
        """The position in the fixed order (proposals handed out before it stay pending under their ids)."""
        atomic_write_json(path, {"engine": "grid", "position": self._position})
        return True

    def restore(self, path: str) -> None:
        position = int(json.loads(Path(path).read_text())["position"])
        self._points = self._enumerate()
        self._position = len(list(itertools.islice(self._points, position)))


def create(space: SearchSpace, options: EngineOptions) -> GridEngine:
    """The engine's entry point (its catalog entry below; :mod:`paretotune.search.registry` calls it)."""
    return GridEngine(space, pool_size=options.pool_size)


register(EngineInfo("grid", create, "every point once, in order (exhaustive baseline)",
                    acf_sources=("finite", "none")))
