"""Uniform random search: the baseline every smarter engine must beat at equal budget.

Kernel knobs and finite-list ACFs (no-ACF included, as one option among the others) are drawn with a seeded
numpy generator; generated ACFs are drawn from CompileIQ's PTXAS space (its sampler has no seed, so those
draws are not reproducible from ``seed``). Draws are with replacement; the registry's de-duplication makes
repeated points free, which turns this into sampling without replacement on small spaces.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from paretotune.search.base import EngineOptions, Proposal
from paretotune.search.space import SearchSpace
from paretotune.store.atomic import atomic_write_json


class RandomEngine:
    def __init__(self, space: SearchSpace, *, pool_size: int, seed: int) -> None:
        self.space, self.pool_size = space, pool_size
        self._rng = np.random.default_rng(seed)
        self._count = 0
        self._sampler: Any = None
        if space.acf == "generated":
            from compileiq.ciq import Search
            from compileiq.types import SearchConfiguration, WorkerTypes

            from paretotune.search.compileiq_engine import _ptxas_space

            self._sampler = Search(objective_function=lambda _c: 0.0,
                                   search_space=_ptxas_space(space.ptxas_version),
                                   search_config=SearchConfiguration(problem_type="min", pool_size=max(pool_size, 6),
                                                                     generations=1),
                                   worker_type=WorkerTypes.MANUAL)

    def _acfs(self) -> list[bytes | None]:
        if self._sampler is not None:
            return [bytes.fromhex(h) for h in self._sampler.sample(self.pool_size)]
        if self.space.acf == "finite":
            options = self.space.acf_options
            return [options[int(self._rng.integers(len(options)))].data for _ in range(self.pool_size)]
        return [None] * self.pool_size

    asynchronous = True  # learns nothing: any ask, any tell, any order

    def ask(self) -> list[Proposal]:
        out = []
        for acf in self._acfs():
            chosen = {k: v[int(self._rng.integers(len(v)))] for k, v in self.space.free.items()}
            out.append(Proposal(engine_id=f"r{self._count}", config=self.space.config(chosen), acf=acf))
            self._count += 1
        return out

    def tell(self, scores: dict[str, tuple[float, ...] | None]) -> None:
        """Random search learns nothing."""

    def save(self, path: str) -> bool:
        """The generator state and the id counter (the unseeded ACF sampler has no state worth keeping)."""
        atomic_write_json(path, {"count": self._count, "rng": self._rng.bit_generator.state})
        return True

    def restore(self, path: str) -> None:
        with open(path, encoding="utf-8") as fh:
            state = json.load(fh)
        self._count = int(state["count"])
        self._rng.bit_generator.state = state["rng"]


def create(space: SearchSpace, options: EngineOptions) -> RandomEngine:
    """The registry's entry point (:mod:`paretotune.search.registry`)."""
    return RandomEngine(space, pool_size=options.pool_size, seed=options.seed)
