"""What a search engine is: it proposes candidates and learns from their scores; it never builds or measures.

Scores reach the engine as tuples to *minimize* (the campaign negates "max" objectives first); a failed
candidate is scored ``None``. The campaign owns the budget: engines may propose forever. An engine whose
(finite) space is exhausted returns ``[]`` from ``ask``, and the campaign ends early. An asynchronous engine may
also return ``[]`` while its earlier proposals are in flight (nothing to propose until some come back): the
campaign asks again as each is told, and ends only on ``[]`` with none in flight.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from paretotune.search.space import NativeSpace


@dataclass(frozen=True)
class Proposal:
    """One point to evaluate: a kernel config and an ACF (bytes, or None for compiler defaults)."""

    engine_id: str
    config: dict[str, Any]
    acf: bytes | None


@dataclass(frozen=True)
class EngineOptions:
    """What the campaign gives every engine's ``create`` (:mod:`paretotune.search.registry`); an engine uses
    the fields it needs."""

    n_objectives: int
    pool_size: int
    generations: int
    seed: int
    seed_config: dict[str, Any] | None = None  # a starting point (the baseline's config), for engines that take one
    native: NativeSpace | None = None  # the kernel language's own space (Helion's ConfigSpec), for the engines
    # that search it
    settings: Mapping[str, Any] = field(default_factory=dict)  # the engine's own campaign block (search.helion)


class SearchEngine(Protocol):
    """An engine may set ``asynchronous = True``: it can be asked again while earlier proposals are pending,
    and told any subset of them (CompileIQ declares ``multiple_outstanding_asks``; random search learns
    nothing). The campaign then keeps candidates in flight without waiting for a whole generation
    (:mod:`paretotune.runner.loop`); other engines get a generation at a time."""

    def ask(self) -> list[Proposal]:
        """The next batch of proposals (a generation, or what refills it after failures); ``[]`` when done."""

    def tell(self, scores: dict[str, tuple[float, ...] | None]) -> None:
        """Scores for proposals of the last batch, by ``engine_id``; ``None`` marks a failure."""

    def save(self, path: str) -> bool:
        """Checkpoint the engine's state to ``path`` (atomically); False if the engine cannot."""

    def restore(self, path: str) -> None:
        """Load a :meth:`save` checkpoint into a freshly built engine; proposals pending at save time stay
        pending under the same ``engine_id`` (resume tells or re-evaluates them)."""


def is_asynchronous(engine: object) -> bool:
    """Whether ``engine`` takes overlapping asks and partial tells (see :class:`SearchEngine`)."""
    return bool(getattr(engine, "asynchronous", False))


def engine_errors(engine: object) -> list[str]:
    """The errors an engine met inside itself and went on past (Helion's rounds, each ended by one), through
    wrappers (``inner``), each its first line: a search that carries on in a poorer way must say so in the run,
    not only in a warning a quiet run's log leaves out."""
    while engine is not None:
        errors = getattr(engine, "errors", None)
        if isinstance(errors, list):
            return [(e.strip().splitlines() or ["unknown error"])[0] for e in errors]
        engine = getattr(engine, "inner", None)
    return []
