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

``engine: auto`` (the default) is paretotune's best mode for the kernel: Helion's own search with the ACF as one
more dimension (:mod:`paretotune.search.helion_search`) for a joint search of a Helion kernel whose space is
Helion's ConfigSpec (the caller passes it as ``native``), CompileIQ otherwise. The helion engine searches configs;
the ACF-only phase of ``sequential`` (and ``acf-only``) runs CompileIQ.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
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
    native: str | None = None  # the kernel language's own space it searches instead of knob lists ("helion")


ENGINE_TABLE: tuple[EngineInfo, ...] = (  # search.engine defaults to compileiq (campaign/schema.py)
    EngineInfo("compileiq", "paretotune.search.compileiq_engine", "CompileIQ's evolutionary search",
               min_pool_size=lambda n: 3 + 2 * n),  # CompileIQ keeps >= 1 + 2n survivors after culling >= 2
    EngineInfo("nsga2", "paretotune.search.nsga2_engine", "pymoo NSGA-II, mixed integer/categorical encoding",
               acf_sources=("finite", "none")),
    EngineInfo("random", "paretotune.search.random_engine", "uniform draws (the baseline to beat)"),
    EngineInfo("grid", "paretotune.search.grid_engine", "every point once, in order (exhaustive baseline)",
               acf_sources=("finite", "none")),
    EngineInfo("helion", "paretotune.search.helion_search",
               "Helion's own search (LFBOTreeSearch) over its ConfigSpec, the ACF one more dimension",
               native="helion"),
)
ENGINE_INFO = {e.name: e for e in ENGINE_TABLE}
ENGINES = tuple(e.name for e in ENGINE_TABLE if e.native is None)  # engines over knob lists: any kernel
AUTO = "auto"  # helion for a joint search over Helion's ConfigSpec, else compileiq (see resolve_engine)
ENGINE_NAMES = (AUTO, *ENGINE_INFO)  # what search.engine may name
STRATEGIES = ("joint", "sequential", "acf-only")
ACF_ENGINE = "compileiq"  # what searches ACFs alone where the chosen engine searches configs (helion)
# the helion engine's settings (campaign: search.helion): Helion's search_algorithms that need no network or
# config list, its effort profiles, and the defaults (ACFs per round, searches side by side)
HELION_ALGORITHMS = ("LFBOTreeSearch", "LFBOPatternSearch", "PatternSearch", "DifferentialEvolutionSearch",
                     "DESurrogateHybrid", "RandomSearch")
HELION_EFFORTS = ("quick", "full")
HELION_DEFAULTS: dict[str, Any] = {"algorithm": "LFBOTreeSearch", "effort": "quick", "acfs": 8, "islands": 2}


def resolve_engine(engine: str, strategy: str, native: bool) -> str:
    """The engine ``auto`` stands for: Helion's search for a joint search over a Helion ConfigSpec (``native``),
    CompileIQ otherwise; any other name is itself."""
    if engine != AUTO:
        return engine
    return "helion" if native and strategy == "joint" else ACF_ENGINE


def search_problem(engine: str, strategy: str, acf_kind: str) -> str | None:
    """Why this engine/strategy/ACF-source combination cannot run (to follow ``search: ``); None if it can.

    Pure and cheap (no imports), so the campaign schema calls it at load time, before any compile.
    """
    info = ENGINE_INFO.get(ACF_ENGINE if engine == AUTO else engine)
    if info is None:
        return f"unknown engine '{engine}' (known: {', '.join(ENGINE_NAMES)})"
    if strategy not in STRATEGIES:
        return f"unknown strategy '{strategy}' (known: {', '.join(STRATEGIES)})"
    if engine == "helion" and strategy == "acf-only":
        return (f"engine helion searches kernel configs; strategy acf-only searches ACFs only: use {ACF_ENGINE} "
                "(or engine: auto)")
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
    info = ENGINE_INFO.get(ACF_ENGINE if engine == AUTO else engine)  # auto may become compileiq
    need = info.min_pool_size(n_columns) if info is not None else 1
    if pool_size >= need:
        return None
    return (f"{pool_size} is too small for {n_columns} objective column(s) with the {engine} engine "
            f"(need at least {need})")


@dataclass(frozen=True)
class EngineRequest:
    """What :func:`make_engine` reads of a campaign (the runner makes it): the ``search`` section's values, the
    ``acf`` section, the seed, and the campaign file (messages name it; finite ACF lists are read from its
    folder)."""

    where: Path
    engine: str
    strategy: str
    pool_size: int
    generations: int
    seed: int
    acf: Any  # the campaign's acf section: its kind, a finite list's files or pack, the ptxas release it is for
    helion: dict[str, Any] = field(default_factory=dict)  # the helion engine's settings (``search.helion``)

    @property
    def budget(self) -> int:
        return self.generations * self.pool_size


def search_space(request: EngineRequest, knobs: dict[str, list[Any]], constraint: Any = None) -> Any:
    """The campaign's SearchSpace: the adapter's knobs (and which combinations it takes) plus the ACF source
    (finite lists read from disk)."""
    from paretotune.search.space import SearchSpace
    from paretotune.toolchain.acf_sources import acf_options

    acf = request.acf
    options = acf_options(acf, request.where.parent, f"{request.where}: acf") if acf.kind == "finite" else ()
    return SearchSpace(knobs=knobs, acf=acf.kind, acf_options=options, ptxas_version=acf.ptxas_version,
                       constraint=constraint)


def build_engine(name: str, space: Any, *, n_objectives: int, pool_size: int, generations: int,
                 seed: int, seed_config: dict[str, Any] | None = None, native: Any = None,
                 settings: dict[str, Any] | None = None) -> SearchEngine:
    """One bare engine (not de-duplicated) over ``space``; CompileIQ and Helion's search start around
    ``seed_config`` if given (the other engines start uniformly); ``native``: Helion's ConfigSpec for the helion
    engine; ``settings``: the engine's own campaign block."""
    info = ENGINE_INFO.get(name)
    if info is None:
        raise UserError(f"search.engine: unknown engine '{name}' (known: {', '.join(ENGINE_NAMES)})")
    options = EngineOptions(n_objectives=n_objectives, pool_size=pool_size, generations=generations, seed=seed,
                            seed_config=seed_config, native=native, settings=dict(settings or {}))
    engine: SearchEngine = importlib.import_module(info.module).create(space, options)
    return engine


def make_engine(request: EngineRequest, space: dict[str, list[Any]], n_objectives: int, *, constraint: Any = None,
                seed_config: dict[str, Any] | None = None, native: Any = None) -> SearchEngine:
    """The engine a campaign asks for, over the adapter's knob ``space`` (``constraint``: which combinations
    the kernel takes) and the campaign's ACF source; a joint CompileIQ or Helion search, and a sequential one's
    config phase, start around ``seed_config``; ``native``: Helion's ConfigSpec where the space is Helion's."""
    from paretotune.search.dedupe import Deduplicated
    from paretotune.search.sequential import SequentialEngine

    r = request
    problem = search_problem(r.engine, r.strategy, r.acf.kind)
    if problem:
        raise UserError(f"{r.where}: search: {problem}")
    full = search_space(r, space, constraint)
    if not full.searchable:
        raise UserError(f"{r.where}: search: nothing to search (every kernel knob has one value and there "
                        "is no ACF source)")
    kw: dict[str, Any] = {"n_objectives": n_objectives, "pool_size": r.pool_size, "generations": r.generations,
                          "seed": r.seed}
    name = resolve_engine(r.engine, r.strategy, native is not None)
    acf_name, acf_kw = (ACF_ENGINE if name == "helion" else name), dict(kw)
    if name == "helion":
        if native is None:
            raise UserError(f"{r.where}: search.engine: helion searches Helion's own ConfigSpec; it needs a "
                            "Helion kernel whose space is Helion's (no kernel.space, no space in the kernel's spec)")
        kw.update(native=native, settings=dict(r.helion))
    if r.strategy == "acf-only":
        return Deduplicated(build_engine(acf_name, full, **acf_kw, seed_config=seed_config), constraint=full.constraint)
    if r.strategy == "joint":
        return Deduplicated(build_engine(name, full, **kw, seed_config=seed_config), constraint=full.constraint)
    cache: dict[str, Any] = {}

    def phase2(config: dict[str, Any]) -> SearchEngine:
        return Deduplicated(build_engine(acf_name, full.at_config(config), **{**acf_kw, "seed": r.seed + 1}),
                            cache=cache, constraint=full.constraint)

    if not full.configs_only().searchable:  # one config: phase 1 has nothing to tune
        return phase2(full.config({}))
    return SequentialEngine(Deduplicated(build_engine(name, full.configs_only(), **kw, seed_config=seed_config),
                                         cache=cache, constraint=full.constraint), phase2,
                            phase1_budget=max(1, r.budget // 2),
                            knobs=tuple(k for k in full.knobs if k != CONFIG_LIST_KNOB))
