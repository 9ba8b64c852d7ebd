"""Normalization to the baseline, and hypervolume (final and after every evaluation).

Objectives come in different units (milliseconds, registers, percent of peak). Dividing by the baseline --
the default-compiler, default-config candidate -- makes them dimensionless and comparable, and puts the
baseline at 1.0 on every axis. Hypervolume against the point (1, ..., 1) then measures exactly the region
of objective space won over the default compiler: 0 means nothing beats the baseline anywhere.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import moocore
import numpy as np
import pandas as pd

from paretotune.errors import UserError
from paretotune.pareto.table import (
    baseline_row,
    check_directions,
    evaluation_order,
    objective_values,
    split_usable,
    usable_mask,
)
from paretotune.records import Direction


class NoBaselineError(UserError):
    """The run has no usable baseline row, so ratios to the baseline are undefined."""


def ratios(values: np.ndarray, base: np.ndarray, maximize: np.ndarray) -> np.ndarray:
    """Values divided by the baseline, oriented so that smaller is better and the baseline is 1.0.

    "min" columns: ``v / b``. "max" columns: ``b / v`` (so 2x the baseline's occupancy is 0.5); a "max"
    value <= 0 against a positive baseline is ``inf`` (infinitely worse). A ratio needs a positive baseline;
    where the baseline is <= 0 (e.g. zero spilled bytes) the column falls back to the offset form
    ``1 + (v - b) / s`` ("min") or ``1 - (v - b) / s`` ("max") with ``s = |b|``, or 1 when ``b == 0``.
    This keeps the baseline at 1.0 and preserves order, which is all that hypervolume and dominance need.
    """
    values = np.asarray(values, dtype=float)
    base = np.asarray(base, dtype=float)
    maximize = np.asarray(maximize, dtype=bool)
    scale = np.where(base == 0, 1.0, np.abs(base))
    with np.errstate(divide="ignore", invalid="ignore"):
        offset_min = 1.0 + (values - base) / scale
        offset_max = 1.0 - (values - base) / scale
        ratio_max = np.where(values > 0, base / values, np.inf)
    out = np.where(maximize, np.where(base > 0, ratio_max, offset_max), offset_min)
    return np.where(np.isnan(values), np.nan, out)


def normalize_to_baseline(
    results: pd.DataFrame, directions: Mapping[str, Direction], *, baseline: pd.Series | None = None
) -> pd.DataFrame:
    """Copy of ``results`` with each objective column replaced by its ratio to the baseline (see ``ratios``).

    ``baseline`` defaults to the run's first successful baseline row; raises NoBaselineError without one.
    """
    columns = check_directions(directions)
    if baseline is None:
        baseline = require_baseline(results, directions)
    base = np.array([float(baseline[c]) for c in columns])
    maximize = np.array([directions[c] == "max" for c in columns])
    out = results.copy()
    out[columns] = ratios(objective_values(results, directions).to_numpy(), base, maximize)
    return out


def hypervolume(
    results: pd.DataFrame, directions: Mapping[str, Direction], *, ref: Sequence[float] | None = None
) -> float:
    """Hypervolume of the usable rows in baseline-ratio space, against ``ref`` (default: the baseline, all 1.0).

    Only points strictly better than ``ref`` on every objective add volume: an all-baseline run scores 0, and
    so does a candidate that is much faster but merely ties the baseline on, say, register count. Pass a
    reference slightly above 1 (e.g. ``[1.01] * m``) to credit such ties.
    """
    usable, _ = split_usable(results, directions)
    normalized = normalize_to_baseline(usable, directions, baseline=require_baseline(results, directions))
    points = normalized[list(directions)].to_numpy(dtype=float)
    reference = np.ones(len(directions)) if ref is None else np.asarray(ref, dtype=float)
    return _hv(points, reference)


def hypervolume_progress(
    results: pd.DataFrame, directions: Mapping[str, Direction], *, ref: Sequence[float] | None = None
) -> pd.DataFrame:
    """Hypervolume after each evaluation, in evaluation order (by candidate_id), for progress plots.

    One row per evaluated candidate with ``evaluation`` (1-based), ``candidate_id``, ``status`` and
    ``hypervolume``; a failed or dominated evaluation repeats the previous value, since it used budget too.
    Only the current non-dominated set inside the reference box is kept, so each step costs one hypervolume
    of the front rather than of the whole prefix.
    """
    ordered = evaluation_order(results)
    normalized = normalize_to_baseline(ordered, directions)
    usable = usable_mask(ordered, directions)
    points = normalized[list(directions)].to_numpy(dtype=float)
    reference = np.ones(len(directions)) if ref is None else np.asarray(ref, dtype=float)

    front = np.empty((0, len(directions)))
    current = 0.0
    hv = np.empty(len(ordered))
    for pos, point in enumerate(points):
        inside = bool(usable[pos]) and bool(np.all(point < reference))
        if inside and not np.any(np.all(front <= point, axis=1)):
            front = np.vstack([front[~np.all(point <= front, axis=1)], point])
            current = _hv(front, reference)
        hv[pos] = current
    status = ordered["status"].to_numpy() if "status" in ordered.columns else np.full(len(ordered), "ok")
    ids = ordered["candidate_id"].to_numpy() if "candidate_id" in ordered.columns else np.arange(len(ordered))
    return pd.DataFrame({"evaluation": np.arange(1, len(ordered) + 1), "candidate_id": ids,
                         "status": status, "hypervolume": hv})


@dataclass(frozen=True)
class HypervolumeColumns:
    """The objective columns a run's hypervolume is measured over (see :func:`hypervolume_columns`)."""

    directions: dict[str, Direction]  # measured over
    left_out: tuple[str, ...]  # the same for every usable candidate while another column varies
    flat: bool  # no column varies: every usable candidate equals the baseline, so the hypervolume is 0


def hypervolume_columns(results: pd.DataFrame, directions: Mapping[str, Direction]) -> HypervolumeColumns:
    """Leave out of the hypervolume every objective column on which all usable candidates agree.

    Such a column (zero spills everywhere) holds no point strictly better than the baseline, so it would pin
    the hypervolume to 0 however much the other objectives improved. When no column varies, all are kept: the
    hypervolume is 0 either way. This is the one rule: ``front``, the report, the service and progress.csv
    all go through it.
    """
    usable, _ = split_usable(results, directions)
    values = objective_values(usable, directions)
    varying = [c for c in directions if values[c].nunique() > 1]
    if not varying:
        return HypervolumeColumns(directions=dict(directions), left_out=(), flat=True)
    return HypervolumeColumns(directions={c: directions[c] for c in varying},
                              left_out=tuple(c for c in directions if c not in varying), flat=False)


def run_hypervolume_progress(
    results: pd.DataFrame, directions: Mapping[str, Direction], *, ref: Sequence[float] | None = None
) -> pd.DataFrame:
    """:func:`hypervolume_progress` over :func:`hypervolume_columns`: the curve ``<run>/progress.csv`` stores
    and the report draws, whose last value is the hypervolume ``front`` prints. ``ref`` has one value per
    column of ``directions``; a left-out column's value is dropped with it."""
    kept = hypervolume_columns(results, directions).directions
    if ref is not None:
        ref = [r for c, r in zip(directions, ref, strict=True) if c in kept]
    return hypervolume_progress(results, kept, ref=ref)


def require_baseline(results: pd.DataFrame, directions: Mapping[str, Direction]) -> pd.Series:
    """The run's first usable baseline row; raises NoBaselineError when there is none."""
    baseline = baseline_row(results, directions)
    if baseline is None:
        raise NoBaselineError("no successful baseline row (is_baseline, status ok, finite objective values): "
                              "ratios to the default compiler cannot be computed")
    return baseline


def _hv(points: np.ndarray, reference: np.ndarray) -> float:
    """moocore's hypervolume; it ignores points not strictly inside the reference box, and empty is 0."""
    if points.shape[0] == 0:
        return 0.0
    return float(moocore.hypervolume(points, ref=reference))
