"""Pick one candidate from a front when the user wants a single answer rather than a trade-off curve.

Both picks first rescale the given rows so each objective spans [0, 1] over them (0 = best value on the
front), so units and baseline do not matter and a constant objective counts for nothing.

Ties (the same score, e.g. an ACF that changes nothing and its no-ACF twin) go to the simpler build, the one a
user should ship: no ACF before an ACF, then fewer knobs changed from the baseline's config, then the lowest
candidate_id (:func:`simplest_first`).

pymoo's ``HighTradeoffPoints`` was considered for the knee and not used: it returns zero or several points,
fails on fronts of two points, and turns off warnings process-wide.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from pymoo.decomposition.asf import ASF

from paretotune.pareto.attribution import has_acf
from paretotune.pareto.table import minimization_matrix, split_usable
from paretotune.records import Direction

TIE_DECIMALS = 12  # scores equal to this many decimals are ties (sums of rescaled values carry rounding noise)


def asf_pick(
    front: pd.DataFrame, directions: Mapping[str, Direction], *, importance: Mapping[str, float] | None = None,
    baseline_config: Mapping[str, Any] | None = None,
) -> pd.Series:
    """The row minimizing pymoo's achievement scalarization function (ASF) over the rescaled front.

    ASF is ``max_j f_j / w_j`` with the ideal point at the origin: the pick is where the ray along ``w`` meets
    the front. ``importance`` (default: all equal) says how much each objective column matters, larger =
    more; it becomes the ASF weight ``w_j = 1 / importance_j``. Ties go to the simplest build
    (:func:`simplest_first`; ``baseline_config``: what "knobs changed" counts against).
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
    return rows.iloc[simplest_first(rows, scores, baseline_config)[0]]


def knee_pick(front: pd.DataFrame, directions: Mapping[str, Direction], *,
              baseline_config: Mapping[str, Any] | None = None) -> pd.Series:
    """The knee: the row with the smallest sum of rescaled objectives.

    This is the minimum-Manhattan-distance knee (Chiu et al., 2016): the point closest to the ideal point
    in L1 distance, i.e. where moving along the front in any direction gives up more than it gains.
    Ties go to the simplest build (:func:`simplest_first`).
    """
    return knee_order(front, directions, baseline_config=baseline_config).iloc[0]


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


def knee_order(front: pd.DataFrame, directions: Mapping[str, Direction], *,
               baseline_config: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The usable rows sorted by the knee score (sum of rescaled objectives, smallest first), ties simplest
    first: the first row is :func:`knee_pick`'s, the rest follow by how close they come to the ideal point."""
    rows, scaled = _rescaled(front, directions)
    return rows.iloc[simplest_first(rows, scaled.sum(axis=1), baseline_config)]


def simplest_first(rows: pd.DataFrame, scores: np.ndarray, baseline_config: Mapping[str, Any] | None
                   ) -> np.ndarray:
    """Row positions by ``scores`` (smallest first); equal scores by no ACF before an ACF, then fewer knobs away
    from ``baseline_config`` (none given: not counted), then ``rows``' order (by candidate_id)."""
    acf = np.array([has_acf(row) for _, row in rows.iterrows()], dtype=int)
    knobs = np.array([knobs_changed(row.get("config"), baseline_config) for _, row in rows.iterrows()], dtype=int)
    return np.lexsort((np.arange(len(rows)), knobs, acf, np.round(np.asarray(scores, dtype=float), TIE_DECIMALS)))


def baseline_config(baseline: pd.Series | None) -> dict[str, Any] | None:
    """The config of a baseline row (stored as JSON text), for :func:`knobs_changed`; None without one."""
    if baseline is None or not isinstance(baseline.get("config"), str | dict):
        return None
    config = baseline["config"]
    return json.loads(config) if isinstance(config, str) else dict(config)


def knobs_changed(config: Any, baseline_config: Mapping[str, Any] | None) -> int:
    """How many knobs of ``config`` (a dict or its stored JSON text) differ from ``baseline_config``'s."""
    if baseline_config is None or config is None or (isinstance(config, float) and np.isnan(config)):
        return 0
    mine = json.loads(config) if isinstance(config, str) else dict(config)
    return sum(mine.get(k) != baseline_config.get(k) for k in set(mine) | set(baseline_config))
