"""FrontReport: a run's ranked Pareto front with everything shown beside it, computed before any rendering.

Built once from a run directory (:func:`build_front`) or from an in-memory results table (:func:`front_of`)
and rendered by ``paretotune front`` and the end of ``paretotune run`` (:mod:`paretotune.front.text`), by
``--json``, the service and the API (:mod:`paretotune.front.document`), and by the HTML report's front
table and summary (:mod:`paretotune.report.build`).

Front 0 is ordered by the knee pick (:func:`paretotune.pareto.choose.knee_order`: each objective rescaled to
[0, 1] over the front, smallest sum first; ties simplest first: no ACF, then fewer knobs changed from the
baseline), so row 1 is the balanced choice, and of equal points the one to ship. The hypervolume leaves out the
columns :func:`paretotune.pareto.hypervolume_columns` leaves out, the rule progress.csv follows too.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from paretotune.pareto import (
    HypervolumeColumns,
    hypervolume,
    hypervolume_columns,
    rank_fronts,
    select_all_shapes,
    shapes_of,
)
from paretotune.pareto.attribution import acf_shares, share_label
from paretotune.pareto.choose import baseline_config, knee_order
from paretotune.pareto.convention import versus_baseline
from paretotune.front.reader import load_run
from paretotune.pareto.table import baseline_row
from paretotune.records import Direction
from paretotune.store import ObjectiveColumn


@dataclass(frozen=True)
class FrontReport:
    """Everything the front's renderings show, computed before any rendering."""

    run_dir: Path
    columns: list[ObjectiveColumn]
    n_evaluated: int
    front: pd.DataFrame  # front 0 in knee order, with ``front`` and ``crowding``
    excluded: pd.DataFrame  # rows that cannot be ranked, with ``reason``
    baseline: pd.Series | None
    hypervolume: float | None
    all_shapes: pd.DataFrame | None  # None for a single-shape campaign or without a baseline
    measured: HypervolumeColumns  # the columns the hypervolume is measured over, and those left out
    ranked: pd.DataFrame  # every usable row with its ``front`` and ``crowding`` (the report's plots)
    acf_shares: tuple[dict[str, float] | None, ...] = ()  # per front row: {column: share vs its twin} or None
    order: str = "knee"  # how front 0 is ordered

    @property
    def constant(self) -> tuple[str, ...]:
        """Objective columns equal for every ranked candidate (while others vary): left out of the hypervolume."""
        return self.measured.left_out

    @property
    def directions(self) -> dict[str, Direction]:
        return {c.column: c.direction for c in self.columns}

    def ratio(self, row: pd.Series, column: ObjectiveColumn) -> float:
        """The number shown beside a value: its gain over the baseline (pareto/convention); NaN without one."""
        if self.baseline is None:
            return math.nan
        return versus_baseline(float(row[column.column]), float(self.baseline[column.column]), column)

    def share_text(self, i: int, row: pd.Series) -> str:
        """Front row ``i``'s ACF share as shown: '1.033x registers', 'no ACF', 'no twin' or 'undefined'."""
        shares = self.acf_shares[i] if i < len(self.acf_shares) else None
        return share_label(row, shares, self.columns)


def build_front(path: Path) -> FrontReport:
    """Read a run directory and build its FrontReport."""
    _, columns, results = load_run(path)
    return front_of(results, columns, path)


def front_of(results: pd.DataFrame, columns: list[ObjectiveColumn], run_dir: Path) -> FrontReport:
    """The pure part: a results table and its objective columns → FrontReport."""
    directions = {c.column: c.direction for c in columns}
    ranking = rank_fronts(results, directions)
    baseline = baseline_row(results, directions)
    several_shapes = len(shapes_of(columns)) > 1
    measured = hypervolume_columns(results, directions)
    front = (knee_order(ranking.front(0), directions, baseline_config=baseline_config(baseline))
             if len(ranking.front(0)) else ranking.front(0))
    return FrontReport(
        run_dir=run_dir,
        columns=columns,
        n_evaluated=len(results),
        front=front,
        excluded=ranking.excluded,
        baseline=baseline,
        hypervolume=None if baseline is None else hypervolume(results, measured.directions),
        all_shapes=select_all_shapes(results, columns) if several_shapes and baseline is not None else None,
        measured=measured,
        ranked=ranking.ranked,
        acf_shares=tuple(acf_shares(results, front, directions)) if len(front) else (),
    )
