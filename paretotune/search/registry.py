"""Building the engine a campaign asks for, and the ``search.strategy`` that composes engines.

The engines themselves are registered in :mod:`paretotune.search.catalog` by their own modules (one
:class:`~paretotune.search.catalog.EngineInfo` each: name, ``create(space, options)``, the ACF sources it can
search, its minimum pool size); :func:`build_engine` looks them up there. Adding an engine is its module plus
one line in ``search/__init__.py`` importing it.

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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paretotune.errors import UserError
from paretotune.search.base import EngineOptions, SearchEngine
from paretotune.search.catalog import ACF_ENGINE, ENGINE_INFO, engine_names, resolve_engine, search_problem
from paretotune.search.space import CONFIG_LIST_KNOB


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
    options = acf_options(acf.files, acf.pack, request.where.parent, f"{request.where}: acf") \
        if acf.kind == "finite" else ()
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
        raise UserError(f"search.engine: unknown engine '{name}' (known: {', '.join(engine_names())})")
    options = EngineOptions(n_objectives=n_objectives, pool_size=pool_size, generations=generations, seed=seed,
                            seed_config=seed_config, native=native, settings=dict(settings or {}))
    engine: SearchEngine = info.create(space, options)
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
