"""CompileIQ's evolutionary engine driven by ask/tell over the joint space [kernel config, PTXAS controls].

Each kernel knob becomes a categorical ``choice`` over the indices of its values (so any value type works).
A generated ACF space adds the PTXAS 13.3 space, whose ACF arrives as a hex string; a finite ACF list is one
more categorical choice (``ACF_KNOB``, option 0 = no ACF). In MANUAL mode the engine never ends by itself.
"""
from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from paretotune.errors import UserError
from paretotune.search.base import EngineOptions, Proposal
from paretotune.search.catalog import EngineInfo, register
from paretotune.search.space import SearchSpace

INVALID = "*"


ACF_KNOB = "__acf__"  # the finite-list choice inside CompileIQ's user-parameter dict


def _ptxas_space(version: str) -> Path:
    """The PTXAS ``version`` space's local file (:mod:`paretotune.toolchain.ciq_space` finds it or says how to)."""
    from paretotune.toolchain.ciq_space import ptxas_space_file

    return ptxas_space_file(version).path


def _engine(seed: int | None) -> Any:
    """CompileIQ's default engine (amber), seeded: its samples, knockouts and evolution are then the same for the
    same seed and the same tells. (The ACF bytes still differ: each sample is encrypted with a fresh nonce.)"""
    from compileiq.backends import EngineConfig

    return EngineConfig(name="amber", options={} if seed is None else {"seed": seed})


def sample_acfs(version: str, count: int, seed: int) -> list[bytes]:
    """``count`` ACFs drawn from the PTXAS ``version`` space by CompileIQ's sampler, the same draws for the same
    ``seed`` (a sampler keeps its seed, so each batch needs its own)."""
    from compileiq.ciq import Search
    from compileiq.types import SearchConfiguration, WorkerTypes

    sampler = Search(objective_function=lambda _c: 0.0, search_space=_ptxas_space(version),
                     search_config=SearchConfiguration(problem_type="min", pool_size=max(count, 6), generations=1),
                     worker_type=WorkerTypes.MANUAL, engine=_engine(seed))
    return [bytes.fromhex(h) for h in sampler.sample(count)]


_EXHAUSTED = re.compile(r"only (\d+) untried candidate")


def _untried(exc: BaseException) -> int | None:
    """How many untried candidates CompileIQ says remain, if ``exc`` is its search-space-exhausted error."""
    match = _EXHAUSTED.search(str(exc))
    if match is None or not isinstance(exc, ValueError):  # SearchSpaceExhaustedError is a ValueError
        return None
    return int(match.group(1))


class CompileIQEngine:
    """Kernel-config × ACF search with ``compileiq.ciq.Search`` in MANUAL (ask/tell) mode."""

    asynchronous = True  # its ask/tell backend allows multiple outstanding asks and tells of any subset

    def __init__(self, space: SearchSpace, *, num_objectives: int, pool_size: int, generations: int,
                 seed_config: Mapping[str, Any] | None = None, seed_prob: float = 0.5,
                 seed: int | None = None) -> None:
        """``seed_config`` (e.g. the baseline's) seeds the search: each knob is left out of an initial candidate
        with probability ``seed_prob`` (CompileIQ's ``knockout_prob``) and a knob left out takes the seed's
        value, so the first generation starts around the seed and evolution turns knobs on. ``seed``: CompileIQ's
        random seed; the same seed and the same tells give the same proposals."""
        from compileiq.ciq import Search
        from compileiq.search_spaces import base as ss
        from compileiq.types import SearchConfiguration, WorkerTypes

        self.space = space
        self.num_objectives = num_objectives
        self._free = space.free
        self._seed = {k: v for k, v in (seed_config or {}).items() if k in self._free and v in self._free[k]}
        user = {k: ss.choice(list(range(len(v))), knockout_prob=seed_prob if k in self._seed else None)
                for k, v in self._free.items()}
        if space.acf == "finite" and len(space.acf_options) > 1:
            user[ACF_KNOB] = ss.choice(list(range(len(space.acf_options))))
        parts: list[Any] = []
        if user:
            parts.append(user)
        if space.acf == "generated":
            parts.append(_ptxas_space(space.ptxas_version))
        if not parts:
            raise UserError("search: nothing to search (every knob has one value and there is no ACF space)")
        config = SearchConfiguration(problem_type="min", generations=generations, pool_size=pool_size,
                                     num_objectives=num_objectives)
        self._parts = parts if len(parts) > 1 else parts[0]
        self._search = Search(objective_function=lambda _c: 0.0, search_space=self._parts,
                              search_config=config, worker_type=WorkerTypes.MANUAL,
                              exit_on_failure=False,  # a generation of failures is data, not the end
                              engine=_engine(seed))
        self._has_user = bool(user)

    def _decode(self, params: Any) -> tuple[dict[str, Any], bytes | None]:
        parts = params if isinstance(params, list) else [params]
        user = dict(parts[0]) if self._has_user else {}
        acf: bytes | None = None
        if self.space.acf == "generated":
            acf = bytes.fromhex(parts[-1])
        elif self.space.acf == "finite":
            acf = self.space.acf_options[int(user.pop(ACF_KNOB, 0))].data
        config = self.space.config({**self._seed, **{k: self._free[k][int(i)] for k, i in user.items()}})
        return config, acf

    def _ask(self) -> list[Any]:
        """CompileIQ never repeats a candidate: near exhaustion it refuses a full batch, so ask for what is left."""
        try:
            return list(self._search.ask())
        except Exception as exc:
            left = _untried(exc)
            if left is None:
                raise
        if left == 0:
            return []
        try:
            return list(self._search.ask(num_samples=left))
        except Exception as exc:
            if _untried(exc) is None:
                raise
            return []

    def ask(self) -> list[Proposal]:
        out = []
        for cand in self._ask():
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

    def restore(self, path: str) -> None:
        """Continue from :meth:`save` on a fresh engine; proposals pending at save time stay pending (same ids).
        The search is rebuilt from the checkpoint (CompileIQ's way for a seeded engine: the seed, the generator's
        state and the configuration are the checkpoint's)."""
        from compileiq.backends import PendingCandidatePolicy
        from compileiq.ciq import Search

        self._search = Search.from_checkpoint(Path(path), objective_function=lambda _c: 0.0,
                                              search_space=self._parts,
                                              pending_policy=PendingCandidatePolicy.RESUBMIT)


def create(space: SearchSpace, options: EngineOptions) -> CompileIQEngine:
    """The engine's entry point (its catalog entry below; :mod:`paretotune.search.registry` calls it)."""
    return CompileIQEngine(space, num_objectives=options.n_objectives, pool_size=options.pool_size,
                           generations=options.generations, seed_config=options.seed_config, seed=options.seed)


register(EngineInfo("compileiq", create, "CompileIQ's evolutionary search",
                    min_pool_size=lambda n: 3 + 2 * n))  # CompileIQ keeps >= 1 + 2n survivors after culling >= 2
