"""The loop's counters and the batch a crashed run left in flight: what a resume hands the loop to go on with
(:mod:`paretotune.runner.resume` rebuilds both from the run directory)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from paretotune.records import Candidate, TrialRecord


@dataclass
class LoopState:
    next_id: int = 0
    evaluated: int = 0  # search evaluations told (the baseline does not count against the budget)
    generation: int = 0
    elapsed_s: float = 0.0  # wall time this run has had before this loop: earlier processes, this one's start-up


@dataclass(frozen=True)
class InFlight:
    """The generation a crashed run had issued but not told: what a resumed loop finishes first."""

    candidates: tuple[Candidate, ...]
    stored: Mapping[int, TrialRecord] = field(default_factory=dict)  # their records already in the store
    tell: bool = True  # False when the restored engine does not hold them as pending (it cannot be told)
