"""One number per candidate for searches that minimise one number (Helion's), from paretotune's score tuples.

paretotune scores a candidate as a tuple to minimise (runtime per shape, ncu metrics, registers; "max"
objectives negated). Helion's search algorithms rank by one ``perf``. The reduction is the geometric mean, over
the tuple's columns, of each column's ratio to a reference tuple (the baseline's score, or else the first
successful score): ``value / reference`` for a positive column (runtimes, registers) and ``reference / value``
for a negative one (a negated "max" objective such as occupancy), so that smaller is better in every column and
a runtime-only campaign's number is 1 / (geometric-mean speedup over its shapes) - the quantity paretotune
ranks "one kernel for all shapes" by. A column where the value or the reference is zero or the two differ in
sign (spill bytes of 0) contributes ``(value - reference) / (|value| + |reference|)`` instead: bounded, zero when
equal, smaller when better. Failures are ``inf``.

Only the search is steered by this number: every objective is still recorded, and fronts are built from all of
them. Helion's LFBO surrogate classifies candidates by a quantile of this number, so for one column any
monotone reduction would steer it the same way.
"""
from __future__ import annotations

import math
from collections.abc import Sequence


def scalarize(score: Sequence[float] | None, reference: Sequence[float] | None) -> float:
    """The geometric mean of per-column ratios to ``reference`` (see the module docstring); ``inf`` for a
    failure; without a reference, the geometric mean of the absolute values."""
    if score is None:
        return math.inf
    if not score:
        return 1.0
    ref = list(reference) if reference is not None and len(reference) == len(score) else [1.0] * len(score)
    terms = [_log_ratio(float(v), float(r)) for v, r in zip(score, ref, strict=True)]
    if any(not math.isfinite(t) for t in terms):
        return math.inf
    return math.exp(sum(terms) / len(terms))


def _log_ratio(value: float, reference: float) -> float:
    if not math.isfinite(value):
        return math.inf
    if value > 0 and reference > 0:
        return math.log(value / reference)
    if value < 0 and reference < 0:
        return math.log(reference / value)
    spread = abs(value) + abs(reference)
    return 0.0 if spread == 0 else (value - reference) / spread
