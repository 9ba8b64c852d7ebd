"""Non-dominated sorting into ranked fronts, and crowding distance within each front.

Sorting is moocore's ``pareto_rank`` (what pymoo's ``NonDominatedSorting`` calls too); crowding is pymoo's
``calc_crowding_distance``. This module adds what a results table needs around them: mixed directions,
failed and NaN rows split off with a reason, and duplicates treated as one point so that a candidate's
front and crowding never depend on row order.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import moocore
import numpy as np
import pandas as pd
from pymoo.operators.survival.rank_and_crowding.metrics import calc_crowding_distance

from paretotune.pareto.table import minimization_matrix, split_usable
from paretotune.records import Direction


@dataclass(frozen=True)
class Ranking:
    """Ranked rows and the rows that could not be ranked.

    ``ranked`` holds the usable rows plus ``front`` (0 = non-dominated) and ``crowding`` (larger = more
    isolated, ``inf`` at a front's extremes), sorted by front, then crowding descending, then candidate_id.
    ``excluded`` holds failed rows and rows with a missing or non-finite objective value, with a ``reason``.
    """

    ranked: pd.DataFrame
    excluded: pd.DataFrame

    def front(self, k: int = 0) -> pd.DataFrame:
        """The rows of front ``k`` in ranking order."""
        return self.ranked.loc[self.ranked["front"] == k]

    @property
    def n_fronts(self) -> int:
        return 0 if self.ranked.empty else int(self.ranked["front"].max()) + 1


def pareto_ranks(points: np.ndarray) -> np.ndarray:
    """Front index of each row of a minimization matrix (0 = non-dominated); duplicates share a front."""
    points = np.asarray(points, dtype=float)
    order = _lexicographic(points)
    ranks = np.empty(points.shape[0], dtype=np.int64)
    ranks[order] = _ranks_of_sorted(points[order])
    return ranks


def crowding_distances(points: np.ndarray, fronts: np.ndarray) -> np.ndarray:
    """NSGA-II crowding distance of each row within its own front.

    Duplicate points are collapsed before measuring and then share the value of their representative, and
    the representatives are in sorted order, so the result depends on the set of points only. A front with
    at most two distinct points is all extremes: ``inf``.
    """
    points, fronts = np.asarray(points, dtype=float), np.asarray(fronts)
    order = np.lexsort((*points.T[::-1], fronts))
    out = np.empty(points.shape[0])
    out[order] = _crowding_of_sorted(points[order], fronts[order])
    return out


def rank_fronts(results: pd.DataFrame, directions: Mapping[str, Direction]) -> Ranking:
    """Sort a run's results into Pareto fronts over the given objective columns.

    ``directions`` maps each objective column to "min" or "max" (``RunDir.directions()``). Columns not in
    the mapping play no part. Rows with status != "ok" or a NaN/inf objective value go to ``excluded``.
    """
    usable, excluded = split_usable(results, directions)
    points = minimization_matrix(usable, directions)
    # one lexicographic sort serves both steps: a stable regroup by front keeps points sorted inside fronts
    order = _lexicographic(points)
    sorted_fronts = _ranks_of_sorted(points[order])
    regroup = np.argsort(sorted_fronts, kind="stable")
    order, sorted_fronts = order[regroup], sorted_fronts[regroup]
    fronts = np.empty(len(usable), dtype=np.int64)
    fronts[order] = sorted_fronts
    crowding = np.empty(len(usable))
    crowding[order] = _crowding_of_sorted(points[order], sorted_fronts)
    ids = usable["candidate_id"].to_numpy() if "candidate_id" in usable.columns else np.arange(len(usable))
    final = np.lexsort((ids, -crowding, fronts))
    ranked = usable.iloc[final].assign(front=fronts[final], crowding=crowding[final])
    return Ranking(ranked=ranked, excluded=excluded)


def _lexicographic(points: np.ndarray) -> np.ndarray:
    """Row order sorting points lexicographically. moocore peels fronts about 25% faster on sorted input
    (100k x 4, benchmarks/bench_pareto_rank.py), and crowding needs duplicates next to each other."""
    return np.lexsort(points.T[::-1]) if points.shape[0] else np.zeros(0, dtype=np.intp)


def _ranks_of_sorted(points: np.ndarray) -> np.ndarray:
    if points.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(moocore.pareto_rank(np.ascontiguousarray(points)), dtype=np.int64)


def _crowding_of_sorted(points: np.ndarray, fronts: np.ndarray) -> np.ndarray:
    """Crowding for rows sorted by (front, point): each front is a block and duplicates are neighbours."""
    if points.shape[0] == 0:
        return np.zeros(0)
    new_front = np.r_[True, fronts[1:] != fronts[:-1]]
    new_point = new_front | np.r_[True, np.any(points[1:] != points[:-1], axis=1)]
    point_id = np.cumsum(new_point) - 1  # index into the distinct points
    distinct = points[new_point]
    front_starts = np.flatnonzero(new_front[new_point])
    crowding = np.empty(distinct.shape[0])
    for start, stop in zip(front_starts, np.r_[front_starts[1:], distinct.shape[0]], strict=True):
        if stop - start <= 2:
            crowding[start:stop] = np.inf
        else:
            with np.errstate(invalid="ignore"):  # pymoo subtracts inf sentinels at the extremes
                crowding[start:stop] = calc_crowding_distance(distinct[start:stop])
    return np.asarray(crowding[point_id])
