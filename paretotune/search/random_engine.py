"""Uniform random search: the baseline every smarter engine must beat at equal budget.

Kernel knobs and finite-list ACFs (no-ACF included, as one option among the others) are drawn with a seeded
numpy generator; generated ACFs are drawn from CompileIQ's PTXAS space by its sampler, seeded from that
generator batch by batch, so the same ``seed`` gives the same draws. Draws are with replacement; the registry's
de-duplication makes repeated points free, which turns this into sampling without replacement on small spaces.
"""
from __future__ import annotations

import json

from paretotune.search.base import EngineOptions, Proposal
from paretotune.search.catalog import EngineInfo, register
from paretotune.search.space import SearchSpace
from paretotune.store.atomic import atomic_write_json


class RandomEngine:
    def __init__(self, space: SearchSpace, *, pool_size: int, seed: int) -> None:
        import numpy as np  # here, not at the top: importing the module (its catalog entry) stays cheap

        self.space, self.pool_size = space, pool_size
        self._rng = np.random.default_rng(seed)
        self._count = 0
        if space.acf == "generated":  # the space is found (or its absence said) before the first ask
            from paretotune.search.compileiq_engine import _ptxas_space

            _ptxas_space(space.ptxas_version)

    def _acfs(self) -> list[bytes | None]:
        if self.space.acf == "generated":
            from paretotune.search.compileiq_engine import sample_acfs

            return sample_acfs(self.space.ptxas_version, self.pool_size, int(self._rng.integers(2**63)))
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
        """The generator state (the ACF sampler's seeds come from it) and the id counter."""
        atomic_write_json(path, {"count": self._count, "rng": self._rng.bit_generator.state})
        return True

    def restore(self, path: str) -> None:
        with open(path, encoding="utf-8") as fh:
            state = json.load(fh)
        self._count = int(state["count"])
        self._rng.bit_generator.state = state["rng"]


def create(space: SearchSpace, options: EngineOptions) -> RandomEngine:
    """The engine's entry point (its catalog entry below; :mod:`paretotune.search.registry` calls it)."""
    return RandomEngine(space, pool_size=options.pool_size, seed=options.seed)


register(EngineInfo("random", create, "uniform draws (the baseline to beat)"))
