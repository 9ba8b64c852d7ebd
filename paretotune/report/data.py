"""A run's records → ReportData: every number, point and table the report shows, computed before any drawing.

The HTML page (``html.py``) and the PNG files (``png.py``) both draw from this one object, as optuna's plotly
and matplotlib backends draw from one info tuple, so tests check the data here and only check that the
drawings render. Nothing in this module imports a plotting library.

Each plot is optional: when a run cannot support it (no baseline, one objective, one shape, nothing
succeeded) the field is None and ``notes`` says why, so the page can say so instead of showing an empty axis.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from paretotune.errors import UserError
from paretotune.pareto import (
    hypervolume_progress,
    normalize_to_baseline,
    rank_fronts,
    select_all_shapes,
    shapes_of,
)
from paretotune.pareto.table import baseline_row
from paretotune.records import Direction
from paretotune.store import ObjectiveColumn, RunDir

VALIDATION = "validation.csv"
MAX_PAIRS = 24  # scatter plots; past this the page gets slow and nobody reads them all
MAX_SHAPE_CANDIDATES = 10  # bars per objective in the per-shape chart
MAX_IDS_IN_LABEL = 8


@dataclass(frozen=True)
class Summary:
    """The campaign at a glance: what was tuned, for what, with which budget and toolchain."""

    run_dir: str
    campaign: str
    kernel: str
    shapes: list[str]  # "wide (M=4096, N=16384, dtype=float16)"
    objectives: list[tuple[str, Direction]]  # once each, in campaign order
    budget: str
    target: str
    versions: dict[str, str]
    seed: int | None
    created: str
    n_evaluated: int
    n_failed: int  # status != ok
    n_excluded: int  # failed, or a missing / non-finite objective value
    n_front: int
    hypervolume: float | None  # final value of ``Progress`` (0 when nothing varies); None without a baseline


@dataclass(frozen=True)
class PairPlot:
    """Two objective columns against each other.

    ``points`` has one row per distinct (x, y) among the non-baseline candidates -- static objectives such as
    register counts repeat a lot -- with ``x``, ``y``, ``front`` (best front among them), ``count`` and
    ``ids`` (candidate ids, truncated). ``baseline`` is the baseline's (x, y), drawn on top.
    """

    x: ObjectiveColumn
    y: ObjectiveColumn
    points: pd.DataFrame
    baseline: tuple[float, float] | None


@dataclass(frozen=True)
class ValuesPlot:
    """The single-objective stand-in for pair plots: every usable value (``candidate_id``, ``value``,
    ``front``, ``is_baseline``), drawn as a histogram with the baseline and the best value marked."""

    column: ObjectiveColumn
    points: pd.DataFrame
    baseline: float | None


@dataclass(frozen=True)
class ShapeChart:
    """Improvement over the baseline per shape, for a few candidates, one panel per objective.

    ``bars`` rows: ``candidate_id``, ``objective``, ``shape``, ``improvement`` = 1 / (ratio to the baseline,
    oriented so that smaller is better), so > 1 is better for "min" and "max" objectives alike (runtime: the
    speedup). It is ``inf`` where a "min" value drops to 0 from a positive baseline (spills removed).
    """

    objectives: list[str]
    shapes: list[str]
    candidate_ids: list[int]
    selection: str  # which candidates are shown and why
    bars: pd.DataFrame


@dataclass(frozen=True)
class ParallelPlot:
    """Every usable row on parallel axes (more than two objective columns). ``rows`` has ``candidate_id``,
    ``group`` ("baseline" | "front 0" | "dominated") and the objective columns."""

    columns: list[ObjectiveColumn]
    rows: pd.DataFrame


@dataclass(frozen=True)
class Progress:
    """Hypervolume after each evaluation, in baseline-ratio space (see ``paretotune.pareto.indicators``).

    Objective columns on which every usable candidate equals the baseline (zero spills everywhere) are left
    out: with them no point is strictly better than the baseline on every axis, and the hypervolume would be 0
    however much the other objectives improved. ``ignored`` names them.
    """

    table: pd.DataFrame  # evaluation, candidate_id, status, hypervolume
    columns: list[str]
    ignored: list[str]

    @property
    def final(self) -> float:
        return float(self.table["hypervolume"].iloc[-1]) if len(self.table) else 0.0


@dataclass(frozen=True)
class ReportData:
    """Everything ``paretotune report`` shows. Plot fields are None when the run cannot support the plot."""

    summary: Summary
    columns: list[ObjectiveColumn]
    baseline: dict[str, float] | None  # objective column -> the baseline's value
    pairs: list[PairPlot]
    pairs_omitted: int
    values: ValuesPlot | None
    shapes: ShapeChart | None
    parallel: ParallelPlot | None
    progress: Progress | None
    front: pd.DataFrame  # front 0: rank, candidate_id, is_baseline, generation, acf, <col>, <col> ratio, ...
    all_shapes: pd.DataFrame | None  # select_all_shapes(); None for one shape or without a baseline
    validation: pd.DataFrame | None  # validation.csv plus a ``verdict`` column; None when not validated
    failures: pd.DataFrame  # candidate_id, generation, status, reason, config
    notes: dict[str, str] = field(default_factory=dict)  # plot name -> why it is absent

    def plots(self) -> list[str]:
        """Names of the plots this report draws, in page order (the HTML test counts them)."""
        names = [f"pair:{p.x.column}:{p.y.column}" for p in self.pairs]
        names += ["values"] if self.values is not None else []
        names += ["shapes"] if self.shapes is not None else []
        names += ["parallel"] if self.parallel is not None else []
        names += ["progress"] if self.progress is not None else []
        names += ["validation"] if self.validation is not None and has_speedups(self.validation) else []
        return names


# -- reading ------------------------------------------------------------------------------------------------
def load_run(path: Path) -> tuple[RunDir, list[ObjectiveColumn], pd.DataFrame]:
    """The run, its objective columns and its results table; bad directories are one-line UserErrors."""
    run = RunDir.open(path)
    columns = run.objective_columns()
    return run, columns, run.results()


def load_report_data(path: Path) -> ReportData:
    """Read a run directory (and its validation.csv, if any) and build its ReportData."""
    run, columns, results = load_run(path)
    campaign_text = run.campaign_text() if (path / "campaign.yaml").exists() else ""
    validation = None
    if (path / VALIDATION).exists():
        if not (path / VALIDATION).is_file():
            raise UserError(f"{path / VALIDATION}: not a regular file")
        try:
            validation = pd.read_csv(path / VALIDATION)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
            raise UserError(f"{path / VALIDATION}: not a readable CSV ({exc})") from None
    return build_report_data(run_dir=str(path), meta=run.meta(), columns=columns, results=results,
                             campaign_text=campaign_text, validation=validation)


# -- building -----------------------------------------------------------------------------------------------
def build_report_data(*, run_dir: str, meta: dict[str, Any], columns: list[ObjectiveColumn],
                      results: pd.DataFrame, campaign_text: str = "",
                      validation: pd.DataFrame | None = None) -> ReportData:
    """The pure part: in-memory run contents → ReportData."""
    directions = {c.column: c.direction for c in columns}
    results = _with_defaults(results)
    for c in directions:  # nothing measured yet (only failures): the column is absent, not empty
        if c not in results.columns:
            results[c] = np.nan
    ranking = rank_fronts(results, directions)
    ranked = ranking.ranked
    base = baseline_row(results, directions)
    baseline = None if base is None else {c: float(base[c]) for c in directions}
    notes: dict[str, str] = {}

    constant = [c for c in columns if not ranked.empty and ranked[c.column].nunique() <= 1]
    if constant and len(constant) < len(columns):
        notes["constant"] = ("the same for every successful candidate (plots leave these out where other "
                             "objectives vary): " + ", ".join(f"{c.column} = {_num(ranked[c.column].iloc[0])}"
                                                             for c in constant))
    varying = [c for c in columns if c not in constant] or list(columns)
    pairs, omitted = _pairs(ranked, varying if len(varying) > 1 else columns, baseline)
    if not pairs:
        notes["pairs"] = ("no candidate evaluated successfully" if ranked.empty
                          else "one objective column: no pairs to plot")
    if len(columns) == 1 and ranked.empty:
        notes["values"] = "no candidate evaluated successfully"
    values = _values(ranked, columns[0], baseline) if len(columns) == 1 and not ranked.empty else None

    several_shapes = len(shapes_of(columns)) > 1
    shapes_chart, all_shapes = None, None
    if several_shapes:
        if base is None:
            notes["shapes"] = "no successful baseline: improvements over it cannot be computed"
        else:
            shapes_chart, all_shapes = _shape_chart(results, ranked, columns, varying, base)
            if shapes_chart is None:
                notes["shapes"] = "no candidate other than the baseline evaluated successfully"

    parallel = None
    if len(columns) > 2:
        if ranked.empty:
            notes["parallel"] = "no candidate evaluated successfully"
        else:
            parallel = ParallelPlot(columns=list(columns), rows=_parallel_rows(ranked, columns))

    progress = None
    if base is None:
        notes["progress"] = "no successful baseline: hypervolume is measured against it"
    else:
        progress = _progress(results, ranked, directions)
        if progress is None:
            notes["progress"] = ("every candidate equals the baseline on every objective: the hypervolume is 0 "
                                 "throughout")

    final_hv = None if base is None else (0.0 if progress is None else progress.final)
    summary = _summary(run_dir, meta, columns, campaign_text, results, ranking.excluded, len(ranking.front(0)),
                       final_hv)
    return ReportData(
        summary=summary, columns=list(columns), baseline=baseline, pairs=pairs, pairs_omitted=omitted,
        values=values, shapes=shapes_chart, parallel=parallel, progress=progress,
        front=_front_table(_knee_first(ranking.front(0), directions), columns, baseline, results),
        all_shapes=all_shapes,
        validation=None if validation is None else with_verdicts(validation),
        failures=_failures(ranking.excluded), notes=notes,
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
        pairs.append(PairPlot(x=x, y=y, points=points, baseline=base_xy))
    return pairs, max(0, len(combos) - MAX_PAIRS)


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
            ratio = float(row[c.column])
            rows.append({"candidate_id": int(row["candidate_id"]), "objective": c.objective, "shape": c.shape,
                         "improvement": math.inf if ratio == 0 else 1.0 / ratio})
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


def _progress(results: pd.DataFrame, ranked: pd.DataFrame, directions: dict[str, Direction]) -> Progress | None:
    varying = [c for c in directions if ranked[c].nunique() > 1]
    if not varying:
        return None
    table = hypervolume_progress(results, {c: directions[c] for c in varying})
    return Progress(table=table, columns=varying, ignored=[c for c in directions if c not in varying])


def _knee_first(front: pd.DataFrame, directions: dict[str, Any]) -> pd.DataFrame:
    """Front 0 in the order 'front' prints it: the knee pick first (paretotune.pareto.choose.knee_order)."""
    from paretotune.pareto.choose import knee_order

    return knee_order(front, directions) if len(front) else front


def _front_table(front: pd.DataFrame, columns: list[ObjectiveColumn],
                 baseline: dict[str, float] | None, results: pd.DataFrame) -> pd.DataFrame:
    """Front 0 in ranking order; ``<col> ratio`` is what 'front' shows beside each value: the speedup
    (baseline / value) for a time objective, else value / baseline (``paretotune.pareto.convention``); and the
    ACF share against the candidate's no-ACF twin (``acf share``, as 'front' shows it)."""
    from paretotune.pareto.attribution import acf_shares, share_label
    from paretotune.pareto.convention import versus_baseline

    table = pd.DataFrame({"rank": np.arange(1, len(front) + 1),
                          "candidate_id": front["candidate_id"].astype(int).to_numpy(),
                          "is_baseline": front["is_baseline"].to_numpy(dtype=bool),
                          "generation": front["generation"].astype(int).to_numpy(),
                          "acf": front["acf"].to_numpy()})
    for c in columns:
        values = front[c.column].astype(float).to_numpy()
        table[c.column] = values
        base = np.nan if baseline is None else float(baseline[c.column])
        table[f"{c.column} ratio"] = [versus_baseline(float(v), base, c) for v in values]
    table["crowding"] = front["crowding"].astype(float).to_numpy()
    shares = acf_shares(results, front, {c.column: c.direction for c in columns}) if len(front) else []
    table["acf share"] = [share_label(row, s, columns) for (_, row), s in zip(front.iterrows(), shares, strict=True)]
    table["config"] = front["config"].to_numpy()
    return table


def _failures(excluded: pd.DataFrame) -> pd.DataFrame:
    names = ["candidate_id", "generation", "is_baseline", "status", "reason", "config"]
    if excluded.empty:
        return pd.DataFrame(columns=names)
    return excluded[names].sort_values("candidate_id", kind="stable").reset_index(drop=True)


def with_verdicts(validation: pd.DataFrame) -> pd.DataFrame:
    """validation.csv plus ``verdict``: faster | not significant | error | control ok | control flagged.

    The control arm (baseline against itself) should never be "significant"; when it is, the machine was too
    noisy for the other verdicts to be trusted, and the page says so.
    """
    out = validation.copy()
    for name, default in (("role", "candidate"), ("significant", False), ("failed", ""), ("speedup", np.nan)):
        if name not in out.columns:
            out[name] = default
    out["failed"] = out["failed"].fillna("").astype(str)
    significant = out["significant"].astype(str).str.lower().isin(["true", "1"])
    error = ~np.isfinite(pd.to_numeric(out["speedup"], errors="coerce").to_numpy(dtype=float))
    control = out["role"].astype(str).eq("control")
    out["verdict"] = np.select(
        [control & significant, control, error, significant],
        ["control flagged", "control ok", "error", "faster"], default="not significant")
    out["significant"] = significant
    return out


def has_speedups(validation: pd.DataFrame) -> bool:
    return bool(np.isfinite(pd.to_numeric(validation["speedup"], errors="coerce").to_numpy(dtype=float)).any())


# -- summary ------------------------------------------------------------------------------------------------
def _summary(run_dir: str, meta: dict[str, Any], columns: list[ObjectiveColumn], campaign_text: str,
             results: pd.DataFrame, excluded: pd.DataFrame, n_front: int, final_hv: float | None) -> Summary:
    spec = _campaign_spec(campaign_text, run_dir)
    if spec is not None:
        kernel = spec.kernel.source
        shapes = [_shape_text(s.label(), s.params()) for s in spec.shapes]
        search = spec.search
        budget = (f"{search.generations} generations x {search.pool_size} candidates = {search.budget} "
                  f"evaluations plus the baseline ({search.engine} engine, {search.strategy} search)")
        if search.wall_clock_s:
            budget += f", stopping after {search.wall_clock_s:g} s"
    else:
        kernel, shapes, budget = "unknown (campaign.yaml missing or unreadable)", list(meta.get("shapes", [])), \
            "unknown"
    target = str(meta.get("target", "unknown"))
    for key in ("gpu", "gpu_name", "device"):
        if meta.get(key):
            target += f" on {meta[key]}"
    objectives = list(dict.fromkeys((c.objective, c.direction) for c in columns))
    n_failed = int((results["status"] != "ok").sum()) if len(results) else 0
    seed = meta.get("seed")
    return Summary(run_dir=run_dir, campaign=str(meta.get("campaign", spec.name if spec else "unknown")),
                   kernel=kernel, shapes=shapes, objectives=objectives, budget=budget, target=target,
                   versions={str(k): str(v) for k, v in sorted(meta.get("versions", {}).items())},
                   seed=None if seed is None else int(seed), created=str(meta.get("created", "")),
                   n_evaluated=len(results), n_failed=n_failed, n_excluded=len(excluded), n_front=n_front,
                   hypervolume=final_hv)


def _campaign_spec(text: str, where: str) -> Any:
    """The campaign file as CampaignSpec, or None: a report must still render if the schema moved on."""
    if not text:
        return None
    from paretotune.campaign.load import parse_text

    try:
        return parse_text(text, f"{where}/campaign.yaml")
    except UserError:
        return None


def _num(value: Any) -> str:
    value = float(value)
    return f"{value:g}"


def _shape_text(label: str, params: dict[str, Any]) -> str:
    inner = ", ".join(f"{k}={v}" for k, v in params.items())
    return f"{label} ({inner})" if inner else label
