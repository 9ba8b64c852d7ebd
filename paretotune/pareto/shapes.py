"""Across shapes: which single candidate (kernel config + ACF) is safe to ship for every shape of a kernel.

A multi-shape campaign expands each objective into one column per shape (``runtime@4096x8192``,
``runtime@small``, ...). The columns are grouped with the ``objective`` and ``shape`` fields of the run's
objective columns, never by parsing names.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from paretotune.pareto.attribution import has_acf
from paretotune.pareto.choose import baseline_config, knobs_changed
from paretotune.pareto.convention import gains
from paretotune.pareto.indicators import normalize_to_baseline, require_baseline
from paretotune.pareto.table import split_usable

if TYPE_CHECKING:
    from paretotune.store import ObjectiveColumn


def group_by_objective(columns: Sequence[ObjectiveColumn]) -> dict[str, list[ObjectiveColumn]]:
    """Objective name -> its columns, one per shape, in the order given."""
    groups: dict[str, list[ObjectiveColumn]] = {}
    for column in columns:
        groups.setdefault(column.objective, []).append(column)
    return groups


def shapes_of(columns: Sequence[ObjectiveColumn]) -> list[str]:
    """Shape labels in first-seen order."""
    return list(dict.fromkeys(c.shape for c in columns))


def select_all_shapes(
    results: pd.DataFrame,
    columns: Sequence[ObjectiveColumn],
    *,
    objective: str | None = None,
    per_shape: bool = True,
) -> pd.DataFrame:
    """Candidates that dominate the baseline on every shape, best first.

    Selection (``per_shape=True``, the default): on each shape separately the candidate is no worse than the
    baseline on every objective column of that shape and strictly better on at least one. With
    ``per_shape=False`` it must be no worse on every column and strictly better on at least one column
    overall (a candidate that only ties on some shape passes). Comparison is against the run's first
    successful baseline row, in baseline-ratio space (NoBaselineError without one); baseline rows themselves
    are never selected.

    Ranking: speedup on a shape is the gain (pareto/convention, > 1 better) of ``objective`` (default: the first
    objective listed, usually runtime) on that shape, i.e. ``baseline / candidate`` for a "min" objective. Candidates
    are ordered by the geometric mean of speedups over shapes (descending), then by the worst-shape speedup
    (descending), then simplest first (no ACF before an ACF, then fewer knobs changed from the baseline's config), then
    by candidate_id. Columns: ``rank`` (1 = ship this), ``candidate_id``, ``acf``, ``config``, ``geomean_speedup``,
    ``worst_speedup``, ``worst_shape`` and ``speedup@<shape>`` per shape.
    """
    if not columns:
        raise ValueError("columns: no objective columns given")
    directions = {c.column: c.direction for c in columns}
    groups = group_by_objective(columns)
    objective = columns[0].objective if objective is None else objective
    if objective not in groups:
        raise ValueError(f"objective {objective!r} is not among the run's objectives: {', '.join(groups)}")
    speed_columns = {c.shape: c.column for c in groups[objective]}
    shapes = shapes_of(columns)

    baseline = require_baseline(results, directions)
    usable, _ = split_usable(results, directions)
    if "is_baseline" in usable.columns:
        usable = usable.loc[~usable["is_baseline"].fillna(False).astype(bool)]
    if usable.empty:
        return _empty(list(speed_columns))
    normalized = normalize_to_baseline(usable, directions, baseline=baseline)

    keep = np.ones(len(normalized), dtype=bool)
    better_anywhere = np.zeros(len(normalized), dtype=bool)
    for shape in shapes:
        ratio = normalized[[c.column for c in columns if c.shape == shape]].to_numpy(dtype=float)
        keep &= np.all(ratio <= 1.0, axis=1)
        better = np.any(ratio < 1.0, axis=1)
        if per_shape:
            keep &= better
        better_anywhere |= better
    chosen = normalized.loc[keep & better_anywhere]
    if chosen.empty:
        return _empty(list(speed_columns))

    speedups = gains(chosen[list(speed_columns.values())].to_numpy(dtype=float))
    worst = speedups.argmin(axis=1)
    out = pd.DataFrame({
        "candidate_id": chosen["candidate_id"].to_numpy() if "candidate_id" in chosen else chosen.index.to_numpy(),
        "acf": chosen["acf"].to_numpy() if "acf" in chosen else "",
        "config": chosen["config"].to_numpy() if "config" in chosen else "",
        "geomean_speedup": np.exp(np.log(speedups).mean(axis=1)),
        "worst_speedup": speedups.min(axis=1),
        "worst_shape": np.array(list(speed_columns))[worst],
    })
    for i, shape in enumerate(speed_columns):
        out[f"speedup@{shape}"] = speedups[:, i]
    out["_acf"] = [has_acf(row) for _, row in out.iterrows()]
    out["_knobs"] = [knobs_changed(c, baseline_config(baseline)) for c in out["config"]]
    out = (out.sort_values(["geomean_speedup", "worst_speedup", "_acf", "_knobs", "candidate_id"],
                           ascending=[False, False, True, True, True], kind="stable")
           .drop(columns=["_acf", "_knobs"]).reset_index(drop=True))
    out.insert(0, "rank", np.arange(1, len(out) + 1))
    return out


def _empty(shapes: list[str]) -> pd.DataFrame:
    names = ["rank", "candidate_id", "acf", "config", "geomean_speedup", "worst_speedup", "worst_shape"]
    return pd.DataFrame(columns=names + [f"speedup@{s}" for s in shapes])
