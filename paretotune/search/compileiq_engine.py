"""CompileIQ's evolutionary engine driven by ask/tell over the joint space [kernel config, PTXAS controls].

Each kernel knob becomes a categorical ``choice`` over the indices of its values (so any value type works);
the PTXAS 13.3 space contributes the ACF as a hex string. In MANUAL mode the engine never ends by itself.
"""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

from paretotune.errors import UserError
from paretotune.search.base import Proposal

INVALID = "*"


def _ptxas_space(version: str) -> Any:
    from compileiq.search_spaces.compilers import PtxasSearchSpace

    try:
        return PtxasSearchSpace(version=version)
    except Exception as exc:  # noqa: BLE001 - CompileIQ raises several types for "cannot resolve"
        hint = "" if os.environ.get("CIQ_SEARCH_SPACES_DIR") else " (offline? set CIQ_SEARCH_SPACES_DIR to a folder with manifest.json and the .bin)"
        raise UserError(f"acf.search_space: cannot load the PTXAS {version} search space: {exc}{hint}") from None


class CompileIQEngine:
    """Joint kernel-config × ACF search with ``compileiq.ciq.Search`` in MANUAL (ask/tell) mode."""

    def __init__(self, space: dict[str, list[Any]], *, num_objectives: int, pool_size: int, generations: int,
                 with_acf: bool, ptxas_version: str = "13.3") -> None:
        from compileiq.ciq import Search
        from compileiq.search_spaces import base as ss
        from compileiq.types import SearchConfiguration, WorkerTypes

        self.space = space
        self.with_acf = with_acf
        self.num_objectives = num_objectives
        user = {k: ss.choice(list(range(len(v)))) for k, v in space.items() if len(v) > 1}
        self._fixed = {k: v[0] for k, v in space.items() if len(v) == 1}
        parts: list[Any] = []
        if user:
            parts.append(user)
        if with_acf:
            parts.append(_ptxas_space(ptxas_version))
        if not parts:
            raise UserError("search: nothing to search (every knob has one value and there is no ACF space)")
        minimum = 3 + 2 * num_objectives  # CompileIQ keeps >= 1 + 2n survivors after culling >= 2
        if pool_size < minimum:
            raise UserError(f"search.pool_size: {pool_size} is too small for {num_objectives} objective column(s) "
                            f"with the compileiq engine (need at least {minimum})")
        config = SearchConfiguration(problem_type="min", generations=generations, pool_size=pool_size,
                                     num_objectives=num_objectives)
        self._search = Search(objective_function=lambda _c: 0.0, search_space=parts if len(parts) > 1 else parts[0],
                              search_config=config, worker_type=WorkerTypes.MANUAL)
        self._has_user = bool(user)

    def _decode(self, params: Any) -> tuple[dict[str, Any], bytes | None]:
        parts = params if isinstance(params, list) else [params]
        user = parts[0] if self._has_user else {}
        config = dict(self._fixed)
        config.update({k: self.space[k][int(i)] for k, i in user.items()})
        acf = bytes.fromhex(parts[-1]) if self.with_acf else None
        return config, acf

    def ask(self) -> list[Proposal]:
        out = []
        for cand in self._search.ask():
            config, acf = self._decode(cand.params)
            out.append(Proposal(engine_id=str(cand.param_id), config=config, acf=acf))
        return out

    def tell(self, scores: dict[str, tuple[float, ...] | None]) -> None:
        from compileiq.utils.validation import Score

        batch = [Score(score=INVALID if s is None else (s if self.num_objectives > 1 else s[0]), param_id=pid,
                       num_objectives=self.num_objectives, metadata=json.dumps({}))
                 for pid, s in scores.items()]
        if batch:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*left unfilled positions.*")
                self._search.tell(batch)

    def save(self, path: str) -> bool:
        self._search.save_checkpoint(Path(path))
        return True
