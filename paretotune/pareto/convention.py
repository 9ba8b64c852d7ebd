"""One reading of every number shown against the baseline, shared by front, the report, export and the API.

Every ratio is a *gain* over the default-compiler baseline, and > 1 is better everywhere: ``baseline / value``
for an objective minimized (runtime, registers, spill bytes), ``value / baseline`` for one maximized
(occupancy). A runtime's gain is its speedup (1.22x: 22% faster); 5.5x registers is 5.5 times fewer. The
validation speedups, the ACF's share over its no-ACF twin and the all-shapes ranking read the same way. A gain
needs a positive baseline (no gain on 0 spill bytes against 0); a "min" value of 0 against a positive baseline
is an infinite gain (spills removed).
"""
from __future__ import annotations

import math

import numpy as np

from paretotune.store import ObjectiveColumn

TIME_UNITS = ("ms", "s", "us")
PICK_TEXT = ("ordered by knee pick (objectives rescaled to [0, 1] over the front; smallest sum first; "
             "ties: no ACF first, then fewer knobs changed)")
RULE = ("numbers: each value beside its gain over the baseline, > 1 is better: baseline / value where lower is "
        "better (a runtime's gain is its speedup), value / baseline where higher is better")


def unit_of(column: ObjectiveColumn) -> str:
    """The objective's unit (``Objective.unit``), '' when unknown."""
    from paretotune.objectives.registry import OBJECTIVES

    cls = OBJECTIVES.get(column.objective)
    return str(getattr(cls, "unit", "") or "")


def is_time(column: ObjectiveColumn) -> bool:
    """Runtime-like: its gain is called a speedup."""
    return column.direction == "min" and unit_of(column) in TIME_UNITS


def gain(value: float, base: float, direction: str) -> float:
    """The one ratio shown against the baseline (> 1 better); NaN where undefined (see the module docstring)."""
    if not (math.isfinite(value) and math.isfinite(base)) or base <= 0 or value < 0:
        return math.nan
    if direction == "max":
        return value / base
    return base / value if value > 0 else math.inf


def gains(smaller_better: np.ndarray) -> np.ndarray:
    """Gains from ratios already oriented smaller-is-better with the baseline at 1 (``normalize_to_baseline``):
    their inverse, inf at 0. For a positive baseline this equals :func:`gain`."""
    r = np.asarray(smaller_better, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(r == 0, np.inf, 1.0 / r)


def versus_baseline(value: float, base: float, column: ObjectiveColumn) -> float:
    """:func:`gain` of ``value`` for ``column``'s direction."""
    return gain(value, base, column.direction)


def kind(column: ObjectiveColumn) -> str:
    """What the column's ratio is called: 'speedup' for a time objective, else 'gain'."""
    return "speedup" if is_time(column) else "gain"


def header(column: ObjectiveColumn) -> str:
    unit = unit_of(column)
    return f"{column.column} [{unit + ', ' if unit else ''}{kind(column)}]"
