"""Search engines behind one ask/tell interface, and the strategies that compose them."""
from __future__ import annotations

from paretotune.search.base import Proposal, SearchEngine
from paretotune.search.registry import ENGINES, STRATEGIES, make_engine, search_problem

__all__ = ["ENGINES", "STRATEGIES", "Proposal", "SearchEngine", "make_engine", "search_problem"]
