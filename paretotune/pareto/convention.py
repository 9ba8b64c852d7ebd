"""One reading of every number shown against the baseline, shared by front, the report, validate and the API.

A time objective (unit ms, s or us, minimized: runtime, compile time) is shown as a *speedup*,
``baseline / candidate``: 1.22x is 22% faster, > 1 is better everywhere. Any other objective is shown as its
ratio ``value / baseline`` (0.54x registers, 1.5x occupancy), with its unit (``Objective.unit``) in the header.
"""
from __future__ import annotations

import math

from paretotune.store import ObjectiveColumn

TIME_UNITS = ("ms", "s", "us")
PICK_TEXT = ("ordered by knee pick (objectives rescaled to [0, 1] over the front; smallest sum first; "
             "ties: no ACF first, then fewer knobs changed)")


def unit_of(column: ObjectiveColumn) -> str:
    """The objective's unit (``Objective.unit``), '' when unknown."""
    from paretotune.objectives.registry import OBJECTIVES

    cls = OBJECTIVES.get(column.objective)
    return str(getattr(cls, "unit", "") or "")


def is_time(column: ObjectiveColumn) -> bool:
    """Runtime-like: shown as a speedup, baseline / candidate."""
    return column.direction == "min" and unit_of(column) in TIME_UNITS


def versus_baseline(value: float, base: float, column: ObjectiveColumn) -> float:
    """Speedup (baseline / value) for a time objective, else the ratio value / baseline; NaN if undefined."""
    if not (math.isfinite(value) and math.isfinite(base)):
        return math.nan
    if is_time(column):
        return base / value if value != 0 else math.nan
    return value / base if base != 0 else math.nan


def header(column: ObjectiveColumn) -> str:
    unit = unit_of(column)
    kind = "speedup" if is_time(column) else "x baseline"
    return f"{column.column} [{unit + ', ' if unit else ''}{kind}]"
