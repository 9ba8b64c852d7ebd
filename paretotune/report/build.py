"""A run's records → ReportData (:mod:`paretotune.report.data`): the plots' points and tables, computed once.

The front, its order, ratios, ACF shares, hypervolume and the columns left out of it come from the one front
model (:func:`paretotune.front.front_of`), so the page shows what ``paretotune front`` prints; the progress
curve is the one progress.csv stores (:func:`paretotune.pareto.run_hypervolume_progress`).
"""
from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from paretotune.front import FrontReport, front_of, load_run
from paretotune.pareto import normalize_to_baseline, run_hypervolume_progress, select_all_shapes, shapes_of
from paretotune.pareto.convention import gains
from paretotune.report.acf_labels import acf_labels
from paretotune.report.data import PairPlot, ParallelPlot, Progress, ReportData, ShapeChart, ValuesPlot
from paretotune.report.summary import summary_of
from paretotune.report.verdicts import read_validation, with_verdicts
from paretotune.store import ObjectiveColumn

MAX_PAIRS = 24  # scatter plots; past this the page gets slow and nobody reads them all
MAX_SHAPE_CANDIDATES = 10  # bars per objective in the per-shape chart
MAX_IDS_IN_LABEL = 8


def load_report_data(path: Path) -> ReportData:
    """Read a run directory (and its validation.csv, if any) and build its ReportData."""
    run, columns, results = load_run(path)
    campaign_text = run.campaign_text() if (path / "campaign.yaml").exists() else ""
    return build_report_data(run_dir=str(path), meta=run.meta(), columns=columns, results=results,
                             campaign_text=campaign_text, validation=read_validation(path))


def build_report_data(*, run_dir: str, meta: dict[str, Any], columns: list[ObjectiveColumn],
                      results: pd.DataFrame, campaign_text: str = "",
                      validation: pd.DataFrame | None = None) -> ReportData:
    """The pure part: in-memory run contents → ReportData."""
    directions = {c.column: c.direction for c in columns}
    results = _with_defaults(results)
    for c in directions:  # nothing measured yet (only failures): the column is absent, not empty
        if c not in results.columns:
            results[c] = np.nan
    front = front_of(results, columns, Path(run_dir))
    ranked = front.ranked
    base = front.baseline
    baseline = None if base is None else {c: float(base[c]) for c in directions}
    notes: dict[str, str] = {}

    constant = [c for c in columns if c.column in front.constant]
    if constant:
        notes["constant"] = ("the same for every successful candidate (plots leave these out where other "
                             "objectives vary): " + ", ".join(f"{c.column} = {_num(ranked[c.column].iloc[0])}"
                                                             for c in constant))
    varying = [c for c in columns if c not in constant]
    pairs, omitted = _pairs(ranked, varying if len(varying) > 1 else columns, baseline)
    if not pairs:
        notes["pairs"] = ("no candidate evaluated successfully" if ranked.empty
                          else "one objective column: no pairs to plot")
    if len(columns) == 1 and ranked.empty:
        notes["values"] = "no candidate evaluated successfully"
    values = _values(ranked, columns[0], baseline) if len(columns) == 1 and not ranked.empty else None

    shapes_chart, all_shapes = None, None
    if len(shapes_of(columns)) > 1:
        if base is None:
            notes["shapes"] = "no successful baseline: improvements over it cannot be computed"
        else:
            shapes_chart, all_shapes = _shape_chart(results, ranked, columns, varying, base)
            if shapes_chart is None:
                notes["shapes"] = "no candidate other than the baseline evaluated successfully"

    parallel = None
    axes = varying if len(varying) > 1 else columns  # the constant columns the summary names are left out
    if len(columns) > 2:
        if ranked.empty:
            notes["parallel"] = "no candidate evaluated successfully"
        elif len(axes) > 2:
            parallel = ParallelPlot(columns=list(axes), rows=_parallel_rows(ranked, axes))
        else:
            notes["parallel"] = (f"only {len(axes)} objectives vary ({', '.join(c.column for c in axes)}): the pair "
                                 "plot shows them all")

    progress = None
    if base is None:
        notes["progress"] = "no successful baseline: hypervolume is measured against it"
    elif front.measured.flat:
        notes["progress"] = "every candidate equals the baseline on every objective: the hypervolume is 0 throughout"
    else:
        progress = Progress(table=run_hypervolume_progress(results, directions),
                            columns=list(front.measured.directions), ignored=list(front.measured.left_out))

    summary = summary_of(run_dir, meta, columns, campaign_text, results, front.excluded, len(front.front),
                         front.hypervolume)
    return ReportData(
        summary=summary, columns=list(columns), baseline=baseline, pairs=pairs, pairs_omitted=omitted,
        values=values, shapes=shapes_chart, parallel=parallel, progress=progress,
        front=_front_table(front), all_shapes=all_shapes,
        validation=None if validation is None else with_verdicts(validation),
        failures=_failures(front.excluded), notes=notes, acf_labels=acf_labels(results, Path(run_dir) / "acf"),
    )


def _with_defaults(results: pd.DataFrame) -> pd.DataFrame:
    """Columns every stored table has; an empty results file reads as a frame with no columns at all."""
    out = results.copy()
    for name, default in (("candidate_id", 0), ("generation", 0), ("is_baseline", False), ("status", "ok"),
                          ("error", ""), ("acf", ""), ("config", "{}")):
        if name not in out.columns:
            out[name] = pd.Series(default, index=out.index, dtype=object if isinstance(default, str) else None)
    out["is_baseline"] = out["is_baseline"].fillna(False).astype(bool)
    out["acf"] = out["acf"].fillna("").astype(str)
    return out


def _pairs(ranked: pd.DataFrame, columns: list[ObjectiveColumn],
           baseline: dict[str, float] | None) -> tuple[list[PairPlot], int]:
    """One scatter per pair of columns of the same shape (cross-shape trade-offs are the shape chart's job);
    with one objective on several shapes, one per pair of shapes instead."""
    if ranked.empty:
        return [], 0
    combos = [(x, y) for x, y in itertools.combinations(columns, 2) if x.shape == y.shape]
    combos = combos or list(itertools.combinations(columns, 2))
    pairs = []
    others = ranked.loc[~ranked["is_baseline"]]
    for x, y in combos[:MAX_PAIRS]:
        frame = pd.DataFrame({"x": others[x.column].astype(float), "y": others[y.column].astype(float),
                              "front": others["front"].astype(int), "candidate_id": others["candidate_id"]})
        points = (frame.groupby(["x", "y"], sort=True)
                  .agg(front=("front", "min"), count=("candidate_id", "size"), ids=("candidate_id", _id_label))
                  .reset_index().sort_values(["front", "x", "y"], ascending=[False, True, True], kind="stable")
                  .reset_index(drop=True))
        base_xy = None if baseline is None else (baseline[x.column], baseline[y.column])
        shown = [points["x"].to_numpy(float), points["y"].to_numpy(float)]
        pairs.append(PairPlot(x=x, y=y, points=points, baseline=base_xy,
                              log_x=log_axis(np.r_[shown[0], [] if base_xy is None else [base_xy[0]]]),
                              log_y=log_axis(np.r_[shown[1], [] if base_xy is None else [base_xy[1]]])))
    return pairs, max(0, len(combos) - MAX_PAIRS)


LOG_GAIN = 2.0  # a log axis when it gives the middle half of the values at least this many times more room


def log_axis(values: np.ndarray) -> bool:
    """Whether an axis over ``values`` reads better on a log scale: every value positive, and the middle half of
    the distinct values (quartile to quartile) takes :data:`LOG_GAIN` times more of a log axis than of a linear
    one, as when one outlier far above the rest squeezes them into a corner. A value of 0 (spill bytes) keeps
    the axis linear: a log one cannot show it."""
    distinct = np.unique(values[np.isfinite(values)])
    if len(distinct) < 3 or distinct[0] <= 0:
        return False
    low, high = np.percentile(distinct, [25, 75])
    linear = (high - low) / (distinct[-1] - distinct[0])
    logarithmic = math.log(high / low) / math.log(distinct[-1] / distinct[0])
    return bool(logarithmic >= LOG_GAIN * linear)


def _id_label(ids: pd.Series) -> str:
    ordered = sorted(int(i) for i in ids)
    text = ", ".join(str(i) for i in ordered[:MAX_IDS_IN_LABEL])
    return text + (f", ... (+{len(ordered) - MAX_IDS_IN_LABEL})" if len(ordered) > MAX_IDS_IN_LABEL else "")


def _values(ranked: pd.DataFrame, column: ObjectiveColumn, baseline: dict[str, float] | None) -> ValuesPlot:
    points = pd.DataFrame({"candidate_id": ranked["candidate_id"].astype(int).to_numpy(),
                           "value": ranked[column.column].astype(float).to_numpy(),
                           "front": ranked["front"].astype(int).to_numpy(),
                           "is_baseline": ranked["is_baseline"].to_numpy(dtype=bool)})
    return ValuesPlot(column=column, points=points.sort_values("candidate_id").reset_index(drop=True),
                      baseline=None if baseline is None else baseline[column.column])


def _shape_chart(results: pd.DataFrame, ranked: pd.DataFrame, columns: list[ObjectiveColumn],
                 shown: list[ObjectiveColumn], base: pd.Series) -> tuple[ShapeChart | None, pd.DataFrame]:
    """Candidates that beat the baseline on every shape (select_all_shapes), else the Pareto front; bars for
    the ``shown`` columns only."""
    directions = {c.column: c.direction for c in columns}
    objective = _deciding_objective(ranked, columns)
    all_shapes = select_all_shapes(results, columns, objective=objective)
    if not all_shapes.empty:
        ids = [int(i) for i in all_shapes["candidate_id"]]
        selection = (f"the {min(len(ids), MAX_SHAPE_CANDIDATES)} best of {len(ids)} candidates that beat the "
                     f"baseline on every shape, by geomean {objective} improvement over shapes")
    else:
        front = ranked.loc[(ranked["front"] == 0) & ~ranked["is_baseline"]]
        ids = [int(i) for i in front["candidate_id"]]
        selection = (f"Pareto front 0 ({len(ids)} candidates, first {min(len(ids), MAX_SHAPE_CANDIDATES)} in "
                     "ranking order): no candidate beats the baseline on every shape")
    ids = ids[:MAX_SHAPE_CANDIDATES]
    if not ids:
        return None, all_shapes
    chosen = ranked.set_index("candidate_id").loc[ids].reset_index()
    normalized = normalize_to_baseline(chosen, directions, baseline=base)
    rows = []
    for _, row in normalized.iterrows():
        for c in shown:
            rows.append({"candidate_id": int(row["candidate_id"]), "objective": c.objective, "shape": c.shape,
                         "improvement": float(gains(float(row[c.column])))})
    objectives = list(dict.fromkeys(c.objective for c in shown))
    return ShapeChart(objectives=objectives, shapes=shapes_of(columns), candidate_ids=ids, selection=selection,
                      bars=pd.DataFrame(rows)), all_shapes


def _deciding_objective(ranked: pd.DataFrame, columns: list[ObjectiveColumn]) -> str:
    """The first objective (usually runtime) unless it never varies (e.g. no spills anywhere): then the next."""
    objectives = list(dict.fromkeys(c.objective for c in columns))
    for objective in objectives:
        if any(ranked[c.column].nunique() > 1 for c in columns if c.objective == objective):
            return objective
    return objectives[0]


def _parallel_rows(ranked: pd.DataFrame, columns: list[ObjectiveColumn]) -> pd.DataFrame:
    group = np.where(ranked["is_baseline"], "baseline", np.where(ranked["front"] == 0, "front 0", "dominated"))
    rows = pd.DataFrame({"candidate_id": ranked["candidate_id"].astype(int).to_numpy(), "group": group})
    for c in columns:
        rows[c.column] = ranked[c.column].astype(float).to_numpy()
    return rows


def _front_table(report: FrontReport) -> pd.DataFrame:
    """Front 0 in the front's (knee) order; ``<col> gain`` is what 'front' shows beside each value (its gain over
    the baseline, pareto/convention); ``acf share`` as 'front' shows it."""
    front = report.front
    table = pd.DataFrame({"rank": np.arange(1, len(front) + 1),
                          "candidate_id": front["candidate_id"].astype(int).to_numpy(),
                          "is_baseline": front["is_baseline"].to_numpy(dtype=bool),
                          "generation": front["generation"].astype(int).to_numpy(),
                          "acf": front["acf"].to_numpy()})
    for c in report.columns:
        table[c.column] = front[c.column].astype(float).to_numpy()
        table[f"{c.column} gain"] = [report.ratio(row, c) for _, row in front.iterrows()]
    table["crowding"] = front["crowding"].astype(float).to_numpy()
    table["acf share"] = [report.share_text(i, row) for i, (_, row) in enumerate(front.iterrows())]
    table["config"] = front["config"].to_numpy()
    return table


def _failures(excluded: pd.DataFrame) -> pd.DataFrame:
    names = ["candidate_id", "generation", "is_baseline", "status", "reason", "config"]
    if excluded.empty:
        return pd.DataFrame(columns=names)
    return excluded[names].sort_values("candidate_id", kind="stable").reset_index(drop=True)


def _num(value: Any) -> str:
    value = float(value)
    return f"{value:g}"
