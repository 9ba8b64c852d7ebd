"""The data a batch runner takes and returns: items in, one result per item out (failures are data).

A *batch* is one ncu process profiling many (candidate, shape) items, each launched in its own NVTX range
(see :mod:`paretotune.ncu.names`). The evaluation code supplies the child program as a :data:`ChildCommand`:
a function from a :class:`ChildRequest` to the child's argv.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from paretotune.ncu.catalog import lookup
from paretotune.ncu.names import range_name
from paretotune.ncu.parse import LaunchRow

ItemStatus = Literal["ok", "failed"]


@dataclass(frozen=True)
class BatchItem:
    """One candidate on one shape. ``params`` are for the child (JSON-serializable for the stock child)."""

    candidate_id: int | str
    shape: str
    params: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def range_name(self) -> str:
        return range_name(self.candidate_id, self.shape)

    @property
    def key(self) -> tuple[int | str, str]:
        return (self.candidate_id, self.shape)


@dataclass(frozen=True)
class ChildRequest:
    """What a child command builder gets for one ncu run: the items, an empty directory for its files (a spec,
    say) and the NVTX domain its ranges must use (``None``: the default domain)."""

    items: tuple[BatchItem, ...]
    workdir: Path
    nvtx_domain: str | None


ChildCommand = Callable[[ChildRequest], Sequence[str]]


@dataclass(frozen=True)
class ItemResult:
    """The outcome for one item. ``metrics`` holds every requested metric when ``status == "ok"``."""

    item: BatchItem
    status: ItemStatus
    metrics: dict[str, float] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    kernels: tuple[str, ...] = ()  # one per profiled launch in the range
    error: str = ""
    runs: int = 0  # how many ncu runs this item took part in (> 1 after a batch was split)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class RunRecord:
    """One ncu process: what ran, how it ended, where its files are (``ncu.log``, ``stdout.txt``, …)."""

    index: int
    argv: tuple[str, ...]
    range_names: tuple[str, ...]
    returncode: int | None
    timed_out: bool
    wall_s: float
    kind: str
    message: str
    workdir: str
    n_results: int


@dataclass(frozen=True)
class BatchResult:
    items: tuple[ItemResult, ...]
    runs: tuple[RunRecord, ...]
    ncu_version: str = ""
    warnings: tuple[str, ...] = ()

    def by_key(self) -> dict[tuple[int | str, str], ItemResult]:
        return {r.item.key: r for r in self.items}

    def failed(self) -> list[ItemResult]:
        return [r for r in self.items if not r.ok]

    @property
    def wall_s(self) -> float:
        return sum(run.wall_s for run in self.runs)


def _combine_rule(metric: str, units: Sequence[str]) -> str:
    spec = lookup(metric)
    if spec is not None:
        return spec.combine
    rate_like = any(u == "%" or "/" in u for u in units) or any(s in metric for s in (".pct", ".ratio", "per_"))
    return "weighted_mean" if rate_like else "sum"


def combine_launches(rows: Sequence[LaunchRow], metrics: Sequence[str]) -> dict[str, float | None]:
    """One value per metric for a range holding several launches (a candidate that launches >1 kernel).

    Counts and durations add up; percentages and rates are averaged weighted by each launch's
    ``gpu__time_duration.sum`` (equal weights if a duration is missing); registers take the maximum.
    """
    if len(rows) == 1:
        return {m: rows[0].metrics.get(m) for m in metrics}
    durations = [r.metrics.get("gpu__time_duration.sum") for r in rows]
    weights = [d for d in durations if d is not None and d > 0]
    w = weights if len(weights) == len(rows) else [1.0] * len(rows)
    out: dict[str, float | None] = {}
    for metric in metrics:
        values = [r.metrics.get(metric) for r in rows]
        if any(v is None for v in values):
            out[metric] = None
            continue
        nums = [float(v) for v in values if v is not None]
        rule = _combine_rule(metric, [r.units.get(metric, "") for r in rows])
        if rule == "sum":
            out[metric] = sum(nums)
        elif rule == "max":
            out[metric] = max(nums)
        else:
            out[metric] = sum(x * wi for x, wi in zip(nums, w)) / sum(w)
    return out
