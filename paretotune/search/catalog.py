"""What the campaign file may say about search (engine names, their ACF sources and settings, strategies), without
importing any engine.

Each engine module registers one :class:`EngineInfo` here when it is imported (``search/__init__.py`` imports
them all, so importing anything under ``paretotune.search`` fills the catalog). The campaign schema and its
load-time checks read only this module, so they know no engine module, and an engine added is an engine the
schema accepts. The checks here are pure and cheap: the schema calls them before any compile.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

ALL_SOURCES = ("generated", "finite", "none")  # a campaign's acf.kind: CompileIQ's PTXAS space, a list, no ACFs
AUTO = "auto"  # helion for a joint search over Helion's ConfigSpec, else compileiq (see resolve_engine)
STRATEGIES = ("joint", "sequential", "acf-only")
ACF_ENGINE = "compileiq"  # what searches ACFs alone where the chosen engine searches configs (helion)


def _one(n_objectives: int) -> int:
    return 1


@dataclass(frozen=True)
class EngineInfo:
    """One engine as the campaign sees it. ``create(space, options)`` builds it (the module that defines it is
    already imported; its heavy libraries, CompileIQ or pymoo, are imported inside ``create``)."""

    name: str
    create: Callable[..., Any]  # (space: SearchSpace, options: EngineOptions) -> SearchEngine
    summary: str
    acf_sources: tuple[str, ...] = ALL_SOURCES  # the ACF kinds it can search
    min_pool_size: Callable[[int], int] = _one  # the smallest pool_size for n objective columns
    native: str | None = None  # the kernel language's own space it searches instead of knob lists ("helion")
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # its settings block: setting -> values
    defaults: Mapping[str, Any] = field(default_factory=dict)  # its settings block's defaults


ENGINE_INFO: dict[str, EngineInfo] = {}  # in registration order: the order names are listed in messages


def register(info: EngineInfo) -> EngineInfo:
    """Add an engine (called once by its module, at import); a second engine of the same name is a bug."""
    if ENGINE_INFO.get(info.name, info) is not info:
        raise ValueError(f"search engine {info.name!r} registered twice")
    ENGINE_INFO[info.name] = info
    return info


def engine_names() -> tuple[str, ...]:
    """What ``search.engine`` may name: ``auto`` and every registered engine."""
    return (AUTO, *ENGINE_INFO)


def knob_engines() -> tuple[str, ...]:
    """The engines over knob lists (no native space): any kernel can use them."""
    return tuple(e.name for e in ENGINE_INFO.values() if e.native is None)


def choices(engine: str, setting: str) -> tuple[str, ...]:
    """The values an engine's setting may take (e.g. the helion engine's ``algorithm``)."""
    return tuple(ENGINE_INFO[engine].choices[setting])


def resolve_engine(engine: str, strategy: str, native: bool) -> str:
    """The engine ``auto`` stands for: Helion's search for a joint search over a Helion ConfigSpec (``native``),
    CompileIQ otherwise; any other name is itself."""
    if engine != AUTO:
        return engine
    return "helion" if native and strategy == "joint" else ACF_ENGINE


def search_problem(engine: str, strategy: str, acf_kind: str) -> str | None:
    """Why this engine/strategy/ACF-source combination cannot run (to follow ``search: ``); None if it can."""
    info = ENGINE_INFO.get(ACF_ENGINE if engine == AUTO else engine)
    if info is None:
        return f"unknown engine '{engine}' (known: {', '.join(engine_names())})"
    if strategy not in STRATEGIES:
        return f"unknown strategy '{strategy}' (known: {', '.join(STRATEGIES)})"
    if engine == "helion" and strategy == "acf-only":
        return (f"engine helion searches kernel configs; strategy acf-only searches ACFs only: use {ACF_ENGINE} "
                "(or engine: auto)")
    if acf_kind == "generated" and acf_kind not in info.acf_sources:
        able = [e.name for e in ENGINE_INFO.values() if acf_kind in e.acf_sources]
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
