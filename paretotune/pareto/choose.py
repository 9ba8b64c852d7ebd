"""Pick one candidate from a front when the user wants a single answer rather than a trade-off curve.

Both picks first rescale the given rows so each objective spans [0, 1] over them (0 = best value on the
front), so units and baseline do not matter and a constant objective counts for nothing.

pymoo's ``HighTradeoffPoints`` was considered for the knee and not used: it returns zero or several points,
fails on fronts of two points, and turns off warnings process-wide.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from pymoo.decomposition.asf import ASF

from paretotune.pareto.table import minimization_matrix, split_usable
from paretotune.records import Direction


def asf_pick(
    front: pd.DataFrame, directions: Mapping[str, Direction], *, importance: Mapping[str, float] | None = None
) -> pd.Series:
    """The row minimizing pymoo's achievement scalarization function (ASF) over the rescaled front.

    ASF is ``max_j f_j / w_j`` with the ideal point at the origin: the pick is where the ray along ``w`` meets
    the front. ``importance`` (default: all equal) says how much each objective column matters, larger =
    more; it becomes the ASF weight ``w_j = 1 / importance_j``. Ties go to the lowest candidate_id.
    """
    rows, scaled = _rescaled(front, directions)
    columns = list(directions)
    given = {} if importance is None else dict(importance)
    unknown = sorted(set(given) - set(columns))
    if unknown:
        raise ValueError(f"importance: {', '.join(unknown)} not among the objective columns {columns}")
    values = np.array([float(given.get(c, 1.0)) for c in columns])
    if np.any(values <= 0) or not np.all(np.isfinite(values)):
        raise ValueError(f"importance: every value must be positive and finite, got {given}")
    weights = (1.0 / values) / (1.0 / values).sum()
    scores = np.asarray(ASF().do(scaled, weights, ideal_point=np.zeros(len(columns)))).reshape(-1)
    return rows.iloc[int(np.argmin(scores))]


def knee_pick(front: pd.DataFrame, directions: Mapping[str, Direction]) -> pd.Series:
    """The knee: the row with the smallest sum of rescaled objectives.

    This is the minimum-Manhattan-distance knee (Chiu et al., 2016): the point closest to the ideal point
    in L1 distance, i.e. where moving along the front in any direction gives up more than it gains.
    Ties go to the lowest candidate_id.
    """
    rows, scaled = _rescaled(front, directions)
    return rows.iloc[int(np.argmin(scaled.sum(axis=1)))]


def _rescaled(front: pd.DataFrame, directions: Mapping[str, Direction]) -> tuple[pd.DataFrame, np.ndarray]:
    """Usable rows sorted by candidate_id, and their minimization matrix rescaled to [0, 1] per column."""
    rows, _ = split_usable(front, directions)
    if rows.empty:
        raise ValueError("front: no usable rows to pick from")
    if "candidate_id" in rows.columns:
        rows = rows.sort_values("candidate_id", kind="stable")
    points = minimization_matrix(rows, directions)
    ideal, nadir = points.min(axis=0), points.max(axis=0)
    span = np.where(nadir > ideal, nadir - ideal, 1.0)
    return rows, (points - ideal) / span


def knee_order(front: pd.DataFrame, directions: Mapping[str, Direction]) -> pd.DataFrame:
    """The usable rows sorted by the knee score (sum of rescaled objectives, smallest first): the first row is
    :func:`knee_pick`'s, the rest follow by how close they come to the ideal point."""
    rows, scaled = _rescaled(front, directions)
    order = np.argsort(scaled.sum(axis=1), kind="stable")
    return rows.iloc[order]
