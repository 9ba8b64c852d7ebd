"""Objectives read from Nsight Compute metrics: ``occupancy``, ``l1tex_throughput`` and generic ``ncu_metric``.

They only read ``ShapeMeasurement.ncu``; the evaluator collects the union of ``required_ncu_metrics`` over all
objectives and measures every candidate of a batch in one ncu process (:func:`paretotune.ncu.run_batch`).
"""
from __future__ import annotations

from typing import Any, ClassVar

from paretotune.ncu.catalog import ALIASES, lookup, resolve
from paretotune.objectives.base import Objective, ShapeMeasurement, Stage
from paretotune.records import Direction

ACHIEVED_OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
L1TEX_THROUGHPUT = "l1tex__throughput.avg.pct_of_peak_sustained_active"


def _read(m: ShapeMeasurement, metric: str, objective: str) -> float:
    try:
        return float(m.ncu[metric])
    except KeyError:
        raise ValueError(f"objective '{objective}': no ncu value for {metric} on shape {m.shape!r}") from None


class Occupancy(Objective):
    """Achieved occupancy (% of the SM's maximum warps, while active): higher hides latency better."""

    name: ClassVar[str] = "occupancy"
    direction: ClassVar[Direction] = "max"
    stage: ClassVar[Stage] = "ncu"
    unit: ClassVar[str] = "%"
    ncu_metrics: ClassVar[tuple[str, ...]] = (ACHIEVED_OCCUPANCY,)

    def value(self, m: ShapeMeasurement) -> float:
        return _read(m, ACHIEVED_OCCUPANCY, self.name)


class L1texThroughput(Objective):
    """L1/TEX cache throughput (% of peak while active)."""

    name: ClassVar[str] = "l1tex_throughput"
    direction: ClassVar[Direction] = "max"
    stage: ClassVar[Stage] = "ncu"
    unit: ClassVar[str] = "%"
    ncu_metrics: ClassVar[tuple[str, ...]] = (L1TEX_THROUGHPUT,)

    def value(self, m: ShapeMeasurement) -> float:
        return _read(m, L1TEX_THROUGHPUT, self.name)


class NcuMetric(Objective):
    """Any ncu metric by name or catalog alias. ``direction`` defaults to the catalog's; required otherwise.

    Its label (column stem) is ``ncu_metric:<catalog alias or metric name>``, so several ``ncu_metric``
    objectives in one campaign get distinct columns.
    """

    name: ClassVar[str] = "ncu_metric"
    direction: ClassVar[Direction] = "max"  # placeholder; instances use effective_direction
    stage: ClassVar[Stage] = "ncu"

    def __init__(self, *, metric: str | None = None, direction: str | None = None, **params: Any) -> None:
        if params:
            raise ValueError(f"objective 'ncu_metric': unknown parameter(s) {sorted(params)}; "
                             f"valid: metric, direction")
        if not metric or not isinstance(metric, str):
            raise ValueError(f"objective 'ncu_metric': parameter 'metric' is required, a metric name or one of "
                             f"{', '.join(sorted(ALIASES))}")
        spec = lookup(metric)
        if direction is None:
            if spec is None:
                raise ValueError(f"objective 'ncu_metric': metric {metric!r} is not in the catalog, so "
                                 f"'direction' (min or max) is required")
            direction = spec.direction
        if direction not in ("min", "max"):
            raise ValueError(f"objective 'ncu_metric': direction must be 'min' or 'max' (got {direction!r})")
        self.metric = resolve(metric)
        self._short = spec.alias if spec is not None else self.metric
        self._direction: Direction = "min" if direction == "min" else "max"

    @property
    def required_ncu_metrics(self) -> tuple[str, ...]:
        return (self.metric,)

    @property
    def effective_direction(self) -> Direction:
        return self._direction

    @property
    def label(self) -> str:
        return f"{self.name}:{self._short}"

    def value(self, m: ShapeMeasurement) -> float:
        return _read(m, self.metric, self.label)


NCU_OBJECTIVES: dict[str, type[Objective]] = {cls.name: cls for cls in (Occupancy, L1texThroughput, NcuMetric)}
