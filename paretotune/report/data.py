"""ReportData: every number, point and table the report shows, as plain records (no builders, no drawing).

The HTML page (``html.py``) and the PNG files (``png.py``) both draw from this one object, as optuna's plotly
and matplotlib backends draw from one info tuple, so tests check the data and only check that the drawings
render. :mod:`paretotune.report.build` makes it from a run; nothing here imports a plotting library.

Each plot is optional: when a run cannot support it (no baseline, one objective, one shape, nothing
succeeded) the field is None and ``notes`` says why, so the page can say so instead of showing an empty axis.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from paretotune.records import Direction
from paretotune.report.verdicts import has_speedups
from paretotune.store import ObjectiveColumn


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
    hypervolume: float | None  # the front's (FrontReport.hypervolume): 0 when nothing varies; None without a baseline
    baseline: str = "the kernel's default config"  # where the baseline's config came from (run.json)
    measurement: list[str] = field(default_factory=list)  # clocks, drift, hung time, host load (run.json timing)


@dataclass(frozen=True)
class PairPlot:
    """Two objective columns against each other.

    ``points`` has one row per distinct (x, y) among the non-baseline candidates -- static objectives such as
    register counts repeat a lot -- with ``x``, ``y``, ``front`` (best front among them), ``count`` and
    ``ids`` (candidate ids, truncated). ``baseline`` is the baseline's (x, y), drawn on top. ``log_x`` /
    ``log_y``: that axis is logarithmic, where an outlier far above the rest would squeeze them into a corner
    of a linear one (:func:`paretotune.report.build.log_axis`).
    """

    x: ObjectiveColumn
    y: ObjectiveColumn
    points: pd.DataFrame
    baseline: tuple[float, float] | None
    log_x: bool = False
    log_y: bool = False


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

    ``bars`` rows: ``candidate_id``, ``objective``, ``shape``, ``improvement``: the gain over the baseline
    (pareto/convention), > 1 better for "min" and "max" objectives alike (runtime: the speedup). It is ``inf`` where a
    "min" value drops to 0 from a positive baseline (spills removed).
    """

    objectives: list[str]
    shapes: list[str]
    candidate_ids: list[int]
    selection: str  # which candidates are shown and why
    bars: pd.DataFrame


@dataclass(frozen=True)
class ParallelPlot:
    """Every usable row on parallel axes, one per objective column that varies (more than two of them: the
    constant ones the summary names are left out, as in the pair plots). ``rows`` has ``candidate_id``,
    ``group`` ("baseline" | "front 0" | "dominated") and the objective columns."""

    columns: list[ObjectiveColumn]
    rows: pd.DataFrame


@dataclass(frozen=True)
class Progress:
    """Hypervolume after each evaluation, in baseline-ratio space: the curve progress.csv stores
    (:func:`paretotune.pareto.run_hypervolume_progress`).

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
    front: pd.DataFrame  # front 0: rank, candidate_id, is_baseline, generation, acf, <col>, <col> gain, ...
    all_shapes: pd.DataFrame | None  # select_all_shapes(); None for one shape or without a baseline
    validation: pd.DataFrame | None  # validation.csv plus a ``verdict`` column; None when not validated
    failures: pd.DataFrame  # candidate_id, generation, status, reason, config
    notes: dict[str, str] = field(default_factory=dict)  # plot name -> why it is absent
    acf_labels: dict[int, str] = field(default_factory=dict)  # candidate id -> its ACF's origin and effect

    def plots(self) -> list[str]:
        """Names of the plots this report draws, in page order (the HTML test counts them)."""
        names = [f"pair:{p.x.column}:{p.y.column}" for p in self.pairs]
        names += ["values"] if self.values is not None else []
        names += ["shapes"] if self.shapes is not None else []
        names += ["parallel"] if self.parallel is not None else []
        names += ["progress"] if self.progress is not None else []
        names += ["validation"] if self.validation is not None and has_speedups(self.validation) else []
        return names
