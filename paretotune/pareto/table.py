"""From a run's results table to the numbers pareto/ works on.

Every function here takes the results DataFrame as stored (one row per evaluated candidate) and a mapping
``{objective column: "min" | "max"}``. Rows that cannot be compared -- a failed evaluation, or a missing or
non-finite objective value -- are split off with a reason instead of being ranked, so that a NaN never
silently wins or loses a comparison.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from paretotune.records import Direction

DIRECTIONS = ("min", "max")


def check_directions(directions: Mapping[str, Direction]) -> list[str]:
    """The objective columns in order; raises ValueError naming a bad direction or an empty mapping."""
    if not directions:
        raise ValueError("directions: no objective columns given")
    for column, direction in directions.items():
        if direction not in DIRECTIONS:
            raise ValueError(f"directions[{column!r}]: {direction!r} is not 'min' or 'max'")
    return list(directions)


def objective_values(results: pd.DataFrame, directions: Mapping[str, Direction]) -> pd.DataFrame:
    """The objective columns as floats; a column absent from the table (nothing measured yet) is all NaN."""
    columns = check_directions(directions)
    out = pd.DataFrame(index=results.index)
    for column in columns:
        if column in results.columns:
            out[column] = pd.to_numeric(results[column], errors="coerce").astype(float)
        else:
            out[column] = np.nan
    return out


def is_ok(results: pd.DataFrame) -> pd.Series:
    """Rows whose evaluation succeeded; a table without a status column counts as all ok."""
    if "status" not in results.columns:
        return pd.Series(True, index=results.index)
    return results["status"].eq("ok")


def usable_mask(results: pd.DataFrame, directions: Mapping[str, Direction]) -> np.ndarray:
    """Boolean per row (by position): status ok and every objective value finite."""
    finite = np.isfinite(objective_values(results, directions).to_numpy(dtype=float))
    return np.asarray(is_ok(results).to_numpy(dtype=bool) & finite.all(axis=1))


def split_usable(results: pd.DataFrame, directions: Mapping[str, Direction]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows that can be ranked, the other rows with a ``reason`` column), both in the input's row order."""
    values = objective_values(results, directions)
    finite = np.isfinite(values.to_numpy(dtype=float))
    ok = is_ok(results).to_numpy(dtype=bool)
    usable = ok & finite.all(axis=1)
    excluded = results.loc[~usable].copy()
    reasons = []
    for pos in np.flatnonzero(~usable):
        if not ok[pos]:
            status = results["status"].iloc[pos]
            error = str(results["error"].iloc[pos]) if "error" in results.columns else ""
            reasons.append(f"status={status}" + (f": {error}" if error else ""))
        else:
            bad = [c for c, f in zip(values.columns, finite[pos], strict=True) if not f]
            reasons.append("no finite value for " + ", ".join(bad))
    excluded["reason"] = pd.Series(reasons, index=excluded.index, dtype=object)
    return results.loc[usable].copy(), excluded


def minimization_matrix(frame: pd.DataFrame, directions: Mapping[str, Direction]) -> np.ndarray:
    """(n, m) float array where smaller is better in every column: 'max' columns are negated."""
    values = objective_values(frame, directions).to_numpy(dtype=float, copy=True)
    signs = np.array([-1.0 if directions[c] == "max" else 1.0 for c in directions])
    return np.asarray(values * signs, dtype=float)


def baseline_row(results: pd.DataFrame, directions: Mapping[str, Direction]) -> pd.Series | None:
    """The first usable baseline row in evaluation order, or None.

    A baseline may be re-measured; the first successful measurement is the reference so that the reference
    does not move as the run goes on.
    """
    if "is_baseline" not in results.columns:
        return None
    ordered = evaluation_order(results)
    usable, _ = split_usable(ordered.loc[ordered["is_baseline"].fillna(False).astype(bool)], directions)
    if usable.empty:
        return None
    return usable.iloc[0]


def evaluation_order(results: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by candidate_id (stable, so equal ids keep file order): the order they were evaluated."""
    if "candidate_id" not in results.columns:
        return results
    return results.sort_values("candidate_id", kind="stable")
