"""Search engines by name (the campaign's ``search.engine``) and the ``search.strategy`` that composes them.

==========  =====================================  ===================================================
engine      spaces                                 what it is
==========  =====================================  ===================================================
compileiq   generated ACFs, finite lists, none      CompileIQ's evolutionary search (default)
nsga2       finite lists, none                      pymoo NSGA-II, mixed integer/categorical encoding
random      generated ACFs, finite lists, none      uniform draws (the baseline to beat)
grid        finite lists, none                      every point once, in order (exhaustive baseline)
==========  =====================================  ===================================================

Every engine is wrapped in :class:`~paretotune.search.dedupe.Deduplicated`, so no point is evaluated twice
and an exhausted finite space ends the campaign. ``strategy: sequential`` runs the engine on kernel configs
without ACFs for half the budget, then on ACFs at the knee config (:mod:`paretotune.search.sequential`).
``strategy: acf-only`` searches ACFs only, each shape at its own baseline config (the caller hands it a space
whose knobs hold one value each, or none for per-shape baselines). A space's ``constraint`` (combinations the
kernel rejects) is applied in the de-duplicating wrapper, once for every engine.
"""
from __future__ import annotations

from typing import Any

from paretotune.errors import UserError
from paretotune.search.base import SearchEngine

ENGINES = ("compileiq", "nsga2", "random", "grid")
STRATEGIES = ("joint", "sequential", "acf-only")
_GENERATED = ("compileiq", "random")  # engines that can sample ACFs from CompileIQ's PTXAS space


def search_problem(engine: str, strategy: str, acf_kind: str) -> str | None:
    """Why this engine/strategy/ACF-source combination cannot run (to follow ``search: ``); None if it can.

    Pure and cheap (no imports), so the campaign schema calls it at load time, before any compile.
    """
    if engine not in ENGINES:
        return f"unknown engine '{engine}' (known: {', '.join(ENGINES)})"
    if strategy not in STRATEGIES:
        return f"unknown strategy '{strategy}' (known: {', '.join(STRATEGIES)})"
    if acf_kind == "generated" and engine not in _GENERATED:
        return (f"engine {engine} cannot search generated ACFs (acf.search_space): use {' or '.join(_GENERATED)}, "
                f"or give a finite list (acf.files / acf.pack)")
    if strategy == "sequential" and acf_kind == "none":
        return ("strategy sequential tunes configs, then ACFs: it needs acf.search_space, acf.files or acf.pack "
                "(without ACFs use strategy: joint)")
    if strategy == "acf-only" and acf_kind == "none":
        return "strategy acf-only searches ACFs only: it needs acf.search_space, acf.files or acf.pack"
    return None


def search_space(campaign: Any, knobs: dict[str, list[Any]], constraint: Any = None) -> Any:
    """The campaign's SearchSpace: the adapter's knobs (and which combinations it takes) plus the ACF source
    (finite lists read from disk)."""
    from paretotune.search.space import SearchSpace
    from paretotune.toolchain.acf_sources import acf_options

    acf = campaign.spec.acf
    options = acf_options(acf, campaign.path.parent, f"{campaign.path}: acf") if acf.kind == "finite" else ()
    return SearchSpace(knobs=knobs, acf=acf.kind, acf_options=options, ptxas_version=acf.ptxas_version,
                       constraint=constraint)


def build_engine(name: str, space: Any, *, n_objectives: int, pool_size: int, generations: int,
                 seed: int, seed_config: dict[str, Any] | None = None) -> SearchEngine:
    """One bare engine (not de-duplicated) over ``space``; CompileIQ starts around ``seed_config`` if given
    (the other engines start uniformly)."""
    if name == "compileiq":
        from paretotune.search.compileiq_engine import CompileIQEngine

        return CompileIQEngine(space, num_objectives=n_objectives, pool_size=pool_size, generations=generations,
                               seed_config=seed_config)
    if name == "nsga2":
        from paretotune.search.nsga2_engine import NSGA2Engine

        return NSGA2Engine(space, num_objectives=n_objectives, pool_size=pool_size, seed=seed)
    if name == "random":
        from paretotune.search.random_engine import RandomEngine

        return RandomEngine(space, pool_size=pool_size, seed=seed)
    if name == "grid":
        from paretotune.search.grid_engine import GridEngine

        return GridEngine(space, pool_size=pool_size)
    raise UserError(f"search.engine: unknown engine '{name}' (known: {', '.join(ENGINES)})")


def make_engine(campaign: Any, space: dict[str, list[Any]], n_objectives: int, *, constraint: Any = None,
                seed_config: dict[str, Any] | None = None) -> SearchEngine:
    """The engine a campaign asks for, over the adapter's knob ``space`` (``constraint``: which combinations
    the kernel takes) and the campaign's ACF source; a joint CompileIQ search starts around ``seed_config``."""
    from paretotune.search.dedupe import Deduplicated
    from paretotune.search.sequential import SequentialEngine

    spec = campaign.spec
    problem = search_problem(spec.search.engine, spec.search.strategy, spec.acf.kind)
    if problem:
        raise UserError(f"{campaign.path}: search: {problem}")
    full = search_space(campaign, space, constraint)
    if not full.searchable:
        raise UserError(f"{campaign.path}: search: nothing to search (every kernel knob has one value and there "
                        "is no ACF source)")
    kw: dict[str, Any] = {"n_objectives": n_objectives, "pool_size": spec.search.pool_size,
                          "generations": spec.search.generations, "seed": spec.seed}
    name = spec.search.engine
    if spec.search.strategy in ("joint", "acf-only"):
        return Deduplicated(build_engine(name, full, **kw, seed_config=seed_config), constraint=full.constraint)
    cache: dict[str, Any] = {}

    def phase2(config: dict[str, Any]) -> SearchEngine:
        return Deduplicated(build_engine(name, full.at_config(config), **{**kw, "seed": spec.seed + 1}), cache=cache,
                            constraint=full.constraint)

    if not full.configs_only().searchable:  # one config: phase 1 has nothing to tune
        return phase2(full.config({}))
    return SequentialEngine(Deduplicated(build_engine(name, full.configs_only(), **kw), cache=cache,
                                         constraint=full.constraint), phase2,
                            phase1_budget=max(1, spec.search.budget // 2))
