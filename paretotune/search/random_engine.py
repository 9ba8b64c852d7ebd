"""Uniform random search: the baseline every smarter engine must beat at equal budget.

Kernel knobs are drawn with a seeded numpy generator; ACFs are drawn from CompileIQ's PTXAS space (its
sampler has no seed, so ACF draws are not reproducible from ``seed``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from paretotune.search.base import Proposal


class RandomEngine:
    def __init__(self, space: dict[str, list[Any]], *, pool_size: int, with_acf: bool, seed: int,
                 ptxas_version: str = "13.3") -> None:
        self.space, self.pool_size, self.with_acf = space, pool_size, with_acf
        self._rng = np.random.default_rng(seed)
        self._count = 0
        self._sampler = None
        if with_acf:
            from compileiq.ciq import Search
            from compileiq.types import SearchConfiguration, WorkerTypes

            from paretotune.search.compileiq_engine import _ptxas_space

            self._sampler = Search(objective_function=lambda _c: 0.0, search_space=_ptxas_space(ptxas_version),
                                   search_config=SearchConfiguration(problem_type="min", pool_size=max(pool_size, 6),
                                                                     generations=1),
                                   worker_type=WorkerTypes.MANUAL)

    def ask(self) -> list[Proposal]:
        acfs = self._sampler.sample(self.pool_size) if self._sampler is not None else [None] * self.pool_size
        out = []
        for acf in acfs:
            config = {k: v[int(self._rng.integers(len(v)))] for k, v in self.space.items()}
            out.append(Proposal(engine_id=f"r{self._count}", config=config,
                                acf=bytes.fromhex(acf) if acf is not None else None))
            self._count += 1
        return out

    def tell(self, scores: dict[str, tuple[float, ...] | None]) -> None:
        """Random search learns nothing."""

    def save(self, path: str) -> bool:
        return False
