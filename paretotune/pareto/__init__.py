"""Deciding from a run's results: Pareto fronts, hypervolume, the one candidate for every shape, and whether a
speedup is real.

Functions take the results DataFrame (``paretotune.store.read_results``) and the objective directions
(``RunDir.directions()``) or objective columns (``RunDir.objective_columns()``) and return DataFrames or
small frozen records. Failed rows and rows with NaN objectives are never ranked; they are reported.
"""
from __future__ import annotations

from paretotune.pareto.choose import asf_pick, knee_pick
from paretotune.pareto.dominance import Ranking, crowding_distances, pareto_ranks, rank_fronts
from paretotune.pareto.indicators import (
    HypervolumeColumns,
    NoBaselineError,
    hypervolume,
    hypervolume_columns,
    hypervolume_progress,
    normalize_to_baseline,
    ratios,
    require_baseline,
    run_hypervolume_progress,
)
from paretotune.pareto.shapes import group_by_objective, select_all_shapes, shapes_of
from paretotune.pareto.stats import Thresholds, Verdict, cohens_d, compare, holm, speedup_ci, validate_front, welch_t
from paretotune.pareto.table import baseline_row, split_usable

__all__ = [
    "HypervolumeColumns",
    "NoBaselineError",
    "Ranking",
    "Thresholds",
    "Verdict",
    "asf_pick",
    "baseline_row",
    "cohens_d",
    "compare",
    "crowding_distances",
    "group_by_objective",
    "holm",
    "hypervolume",
    "hypervolume_columns",
    "hypervolume_progress",
    "knee_pick",
    "normalize_to_baseline",
    "pareto_ranks",
    "rank_fronts",
    "ratios",
    "require_baseline",
    "run_hypervolume_progress",
    "select_all_shapes",
    "shapes_of",
    "speedup_ci",
    "split_usable",
    "validate_front",
    "welch_t",
]
