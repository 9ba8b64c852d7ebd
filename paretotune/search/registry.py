"""Search engines by name (the campaign's ``search.engine``) and the ``search.strategy`` that composes them.

Each engine is one :class:`EngineInfo` in :data:`ENGINE_TABLE`: its name, the module whose ``create(space,
options)`` builds it, the ACF sources it can search and its minimum pool size. Adding an engine is one line
there plus its module; the campaign schema, the load-time checks and :func:`build_engine` all read the table.

Every engine is wrapped in :class:`~paretotune.search.dedupe.Deduplicated`, so no point is evaluated twice
and an exhausted finite space ends the campaign. ``strategy: sequential`` runs the engine on kernel configs
without ACFs for half the budget, then on ACFs at the knee config (:mod:`paretotune.search.sequential`).
``strategy: acf-only`` searches ACFs only, each shape at its own baseline config (the caller hands it a space
whose knobs hold one value each, or none for per-shape baselines). A space's ``constraint`` (combinations the
kernel rejects) is applied in the de-duplicating wrapper, once for every engine.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from paretotune.errors import UserError
from paretotune.search.base import EngineOptions, SearchEngine
from paretotune.search.space import CONFIG_LIST_KNOB

ALL_SOURCES = ("generated", "finite", "none")  # a campaign's acf.kind: CompileIQ's PTXAS space, a list, no ACFs


@dataclass(frozen=True)
class EngineInfo:
    """What the rest of paretotune needs to know about an engine without importing it (its module may pull
    in CompileIQ or pymoo)."""

    name: str
    module: str  # defines ``create(space: SearchSpace, options: EngineOptions) -> SearchEngine``
    summary: str
    acf_sources: tuple[str, ...] = ALL_SOURCES  # the ACF kinds it can search
    min_pool_size: Callable[[int], int] = lambda n_objectives: 1  # the smallest pool_size for n objective columns


ENGINE_TABLE: tuple[EngineInfo, ...] = (  # search.engine defaults to compileiq (campaign/schema.py)
    EngineInfo("compileiq", "paretotune.search.compileiq_engine", "CompileIQ's evolutionary search",
               min_pool_size=lambda n: 3 + 2 * n),  # CompileIQ keeps >= 1 + 2n survivors after culling >= 2
    EngineInfo("nsga2", "paretotune.search.nsga2_engine", "pymoo NSGA-II, mixed integer/categorical encoding",
               acf_sources=("finite", "none")),
    EngineInfo("random", "paretotune.search.random_engine", "uniform draws (the baseline to beat)"),
    EngineInfo("grid", "paretotune.search.grid_engine", "every point once, in order (exhaustive baseline)",
               acf_sources=("finite", "none")),
)
ENGINE_INFO = {e.name: e for e in ENGINE_TABLE}
ENGINES = tuple(ENGINE_INFO)
STRATEGIES = ("joint", "sequential", "acf-only")


def search_problem(engine: str, strategy: str, acf_kind: str) -> str | None:
    """Why this engine/strategy/ACF-source combination cannot run (to follow ``search: ``); None if it can.

    Pure and cheap (no imports), so the campaign schema calls it at load time, before any compile.
    """
    info = ENGINE_INFO.get(engine)
    if info is None:
        return f"unknown engine '{engine}' (known: {', '.join(ENGINES)})"
    if strategy not in STRATEGIES:
        return f"unknown strategy '{strategy}' (known: {', '.join(STRATEGIES)})"
    if acf_kind == "generated" and acf_kind not in info.acf_sources:
        able = [e.name for e in ENGINE_TABLE if acf_kind in e.acf_sources]
        return (f"engine {engine} cannot search generated ACFs (acf.search_space): use {' or '.join(able)}, "
                f"or give a finite list (acf.files / acf.pack)")
    if strategy == "sequential" and acf_kind == "none":
        return ("strategy sequential tunes configs, then ACFs: it needs acf.search_space, acf.files or acf.pack "
                "(without ACFs use strategy: joint)")
    if strategy == "acf-only" and acf_kind == "none":
        return "strategy acf-only searches ACFs only: it needs acf.search_space, acf.files or acf.pack"
    return None


def pool_size_problem(engine: str, pool_size: int, n_columns: int) -> str | None:
    """Why ``pool_size`` is too small for this engine and number of objective columns (to follow
    ``search.pool_size: ``); None if it is not. The one check of an engine's minimum pool size."""
    info = ENGINE_INFO.get(engine)
    need = info.min_pool_size(n_columns) if info is not None else 1
    if pool_size >= need:
        return None
    return (f"{pool_size} is too small for {n_columns} objective column(s) with the {engine} engine "
            f"(need at least {need})")


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
    info = ENGINE_INFO.get(name)
    if info is None:
        raise UserError(f"search.engine: unknown engine '{name}' (known: {', '.join(ENGINES)})")
    options = EngineOptions(n_objectives=n_objectives, pool_size=pool_size, generations=generations, seed=seed,
                            seed_config=seed_config)
    engine: SearchEngine = importlib.import_module(info.module).create(space, options)
    return engine


def make_engine(campaign: Any, space: dict[str, list[Any]], n_objectives: int, *, constraint: Any = None,
                seed_config: dict[str, Any] | None = None) -> SearchEngine:
    """The engine a campaign asks for, over the adapter's knob ``space`` (``constraint``: which combinations
    the kernel takes) and the campaign's ACF source; a joint CompileIQ search, and a sequential one's config
    phase, start around ``seed_config``."""
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
    return SequentialEngine(Deduplicated(build_engine(name, full.configs_only(), **kw, seed_config=seed_config),
                                         cache=cache, constraint=full.constraint), phase2,
                            phase1_budget=max(1, spec.search.budget // 2),
                            knobs=tuple(k for k in full.knobs if k != CONFIG_LIST_KNOB))
