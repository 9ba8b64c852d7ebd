"""Search engines behind one ask/tell interface, and the strategies that compose them.

Each engine module registers itself in :mod:`paretotune.search.catalog` when imported; they are imported here,
in the order the campaign's messages list them, so the catalog is full whatever under ``paretotune.search`` is
imported first. Their heavy libraries (CompileIQ, pymoo, Helion) are imported only when an engine is built.
"""
from __future__ import annotations

from paretotune.search import compileiq_engine, nsga2_engine, random_engine, grid_engine, helion_search  # noqa: F401
from paretotune.search.base import Proposal, SearchEngine
from paretotune.search.catalog import STRATEGIES, knob_engines, search_problem
from paretotune.search.registry import make_engine

ENGINES = knob_engines()  # the engines over knob lists: any kernel can use them

__all__ = ["ENGINES", "STRATEGIES", "Proposal", "SearchEngine", "make_engine", "search_problem"]
