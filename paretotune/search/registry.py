"""Search engines by name (the campaign's ``search.engine``)."""
from __future__ import annotations

from typing import Any

from paretotune.errors import UserError
from paretotune.search.base import SearchEngine

ENGINES = ("compileiq", "random")


def make_engine(campaign: Any, space: dict[str, list[Any]], n_objectives: int) -> SearchEngine:
    spec = campaign.spec
    name = spec.search.engine
    with_acf = spec.acf.kind == "generated"
    if name == "compileiq":
        from paretotune.search.compileiq_engine import CompileIQEngine

        return CompileIQEngine(space, num_objectives=n_objectives, pool_size=spec.search.pool_size,
                               generations=spec.search.generations, with_acf=with_acf,
                               ptxas_version=spec.acf.ptxas_version)
    if name == "random":
        from paretotune.search.random_engine import RandomEngine

        return RandomEngine(space, pool_size=spec.search.pool_size, with_acf=with_acf, seed=spec.seed,
                            ptxas_version=spec.acf.ptxas_version)
    raise UserError(f"{campaign.path}: search.engine: unknown engine '{name}' (known: {', '.join(ENGINES)})")
