"""Print a stored run's ranked Pareto front (and the all-shapes pick when the campaign has several shapes).

One reading of every number: a time objective (runtime, compile time; unit ms or s, minimized) is shown as a
*speedup*, ``baseline / candidate`` (1.22x = 22% faster, > 1 is better), in this table, the all-shapes table,
``validate``, the report and the JSON; any other objective as its ratio to the baseline, ``value / baseline``
(0.54x registers, 1.5x occupancy), with the unit in the header. Raw values are kept beside both.

Front 0 is ordered by the knee pick (:func:`paretotune.pareto.choose.knee_order`: each objective rescaled to
[0, 1] over the front, smallest sum first), so row 1 is the balanced choice; the header says so.
``--json`` prints the same data as one JSON document; non-finite numbers become null.

The ``acf_share`` column says what a front candidate's ACF adds over the same config without it (its no-ACF
twin, which the search measures), as a speedup (> 1: the ACF helped; geometric mean over shapes) on the first
objective where that ratio is defined, named in the cell. A row without an ACF shows "no ACF"; one whose
twin is not recorded shows "no twin". ``--json`` gives the share on every objective column.
"""
from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from paretotune.pareto import hypervolume, rank_fronts, select_all_shapes, shapes_of
from paretotune.pareto.attribution import acf_shares, share_label
from paretotune.pareto.convention import PICK_TEXT, header, is_time, unit_of, versus_baseline
from paretotune.pareto.table import baseline_row
from paretotune.store import ObjectiveColumn, RunDir

MAX_EXCLUDED_LINES = 10


@dataclass(frozen=True)
class FrontReport:
    """Everything the command shows, computed before any rendering."""

    run_dir: Path
    columns: list[ObjectiveColumn]
    n_evaluated: int
    front: pd.DataFrame
    excluded: pd.DataFrame
    baseline: pd.Series | None
    hypervolume: float | None
    all_shapes: pd.DataFrame | None  # None for a single-shape campaign or without a baseline
    constant: tuple[str, ...] = ()  # objective columns equal for every ranked candidate: left out of hypervolume
    acf_shares: tuple[dict[str, float] | None, ...] = ()  # per front row: {column: share vs its twin} or None
    order: str = "knee"  # how front 0 is ordered


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory written by 'paretotune run'")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of tables")


def main(args: argparse.Namespace) -> int:
    report = build_report(Path(args.run_dir))
    print(render_json(report) if args.json else render_text(report))
    return 0


def build_report(path: Path) -> FrontReport:
    run = RunDir.open(path)
    columns = run.objective_columns()
    directions = {c.column: c.direction for c in columns}
    results = run.results()
    from paretotune.pareto.choose import knee_order

    ranking = rank_fronts(results, directions)
    baseline = baseline_row(results, directions)
    several_shapes = len(shapes_of(columns)) > 1
    ranked = ranking.ranked
    # an objective nothing moved (e.g. zero spills everywhere) would pin the hypervolume to 0: leave it out,
    # as the HTML report does, and say so
    constant = tuple(c for c in directions if len(ranked) > 1 and ranked[c].nunique() <= 1)
    hv_directions = {c: d for c, d in directions.items() if c not in constant} or directions
    front = knee_order(ranking.front(0), directions) if len(ranking.front(0)) else ranking.front(0)
    return FrontReport(
        run_dir=path,
        columns=columns,
        n_evaluated=len(results),
        front=front,
        excluded=ranking.excluded,
        baseline=baseline,
        hypervolume=None if baseline is None else hypervolume(results, hv_directions),
        all_shapes=select_all_shapes(results, columns) if several_shapes and baseline is not None else None,
        constant=constant if len(constant) < len(directions) else (),
        acf_shares=tuple(acf_shares(results, front, directions)) if len(front) else (),
    )


def share_text(report: FrontReport, i: int, row: pd.Series) -> str:
    shares = report.acf_shares[i] if i < len(report.acf_shares) else None
    return share_label(row, shares, report.columns)


# -- JSON ---------------------------------------------------------------------------------------------------
def render_json(report: FrontReport) -> str:
    doc = {
        "run_dir": str(report.run_dir),
        "objectives": [asdict(c) for c in report.columns],
        "n_evaluated": report.n_evaluated,
        "baseline": None if report.baseline is None else {
            "candidate_id": int(report.baseline["candidate_id"]),
            "values": {c.column: _num(report.baseline[c.column]) for c in report.columns},
            "units": {c.column: unit_of(c) for c in report.columns},
        },
        "front_order": PICK_TEXT,
        "convention": "speedup = baseline / candidate for time objectives (> 1 is faster); ratio = value / baseline "
                      "for the others",
        "hypervolume": _num(report.hypervolume),
        "hypervolume_left_out": list(report.constant),
        "front": [
            {"rank": i, "candidate_id": int(row["candidate_id"]), "acf": _acf(row.get("acf")),
             "config": _config(row.get("config")), "is_baseline": bool(row.get("is_baseline", False)),
             "crowding": _num(row["crowding"]),
             "acf_share": None if report.acf_shares[i - 1] is None else
             {c: _num(v) for c, v in report.acf_shares[i - 1].items()},
             "values": {c.column: _cell_json(report, row, c) for c in report.columns}}
            for i, (_, row) in enumerate(report.front.iterrows(), start=1)
        ],
        "excluded": [{"candidate_id": int(row["candidate_id"]), "status": str(row.get("status", "")),
                      "reason": row["reason"]} for _, row in report.excluded.iterrows()],
        "all_shapes": None if report.all_shapes is None else [
            {"rank": int(row["rank"]), "candidate_id": int(row["candidate_id"]), "acf": _acf(row["acf"]),
             "config": _config(row["config"]), "geomean_speedup": _num(row["geomean_speedup"]),
             "worst_speedup": _num(row["worst_speedup"]), "worst_shape": row["worst_shape"],
             "speedups": {k.split("@", 1)[1]: _num(v) for k, v in row.items() if str(k).startswith("speedup@")}}
            for _, row in report.all_shapes.iterrows()
        ],
    }
    return json.dumps(doc, indent=2, allow_nan=False)


def _num(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _config(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _ratio(report: FrontReport, row: pd.Series, column: ObjectiveColumn) -> float:
    """The number shown beside a value: speedup for a time objective, else value / baseline."""
    if report.baseline is None:
        return math.nan
    return versus_baseline(float(row[column.column]), float(report.baseline[column.column]), column)


def _cell_json(report: FrontReport, row: pd.Series, column: ObjectiveColumn) -> dict[str, Any]:
    """Raw value, unit, ratio value / baseline, and for a time objective its speedup baseline / value."""
    value = float(row[column.column])
    base = math.nan if report.baseline is None else float(report.baseline[column.column])
    out: dict[str, Any] = {"value": _num(value), "unit": unit_of(column),
                           "ratio": _num(value / base if base not in (0.0,) and math.isfinite(base) else math.nan)}
    if is_time(column):
        out["speedup"] = _num(_ratio(report, row, column))
    return out


def front_table(report: FrontReport) -> pd.DataFrame:
    """Front 0 as a DataFrame in the table's order: raw values plus ``speedup:<col>`` / ``ratio:<col>``."""
    rows = []
    for _, row in report.front.iterrows():
        out: dict[str, Any] = {"candidate_id": int(row["candidate_id"]), "acf": _acf(row.get("acf")),
                               "is_baseline": bool(row.get("is_baseline", False)), "config": _config(row.get("config"))}
        for c in report.columns:
            out[c.column] = float(row[c.column])
            out[f"{'speedup' if is_time(c) else 'ratio'}:{c.column}"] = _ratio(report, row, c)
        rows.append(out)
    return pd.DataFrame(rows)


# -- text ---------------------------------------------------------------------------------------------------
def render_text(report: FrontReport) -> str:
    lines = [(f"run {report.run_dir}: {report.n_evaluated} evaluated, {len(report.excluded)} excluded, "
              f"{len(report.front)} on the Pareto front")]
    directions = ", ".join(f"{c.column} ({c.direction}{', ' + unit_of(c) if unit_of(c) else ''})"
                           for c in report.columns)
    lines.append(f"objectives: {directions}")
    if report.baseline is None:
        lines.append("baseline: none usable, so no ratios, hypervolume or all-shapes selection")
    else:
        lines.append(f"baseline: candidate {int(report.baseline['candidate_id'])}; "
                     f"hypervolume over baseline (ratio space): {report.hypervolume:.4g}"
                     + (f" (left out, the same for every candidate: {', '.join(report.constant)})"
                        if report.constant else ""))
        if report.hypervolume == 0 and not report.front["is_baseline"].fillna(False).astype(bool).all():
            lines.append("  hypervolume 0: no candidate beats the baseline on every objective at once (a win on one "
                         "objective with a tie on another adds no volume); front 0 below shows the one-objective wins")
        lines.append("numbers: speedup = baseline / candidate for time objectives (> 1 is faster); "
                     "x baseline = value / baseline for the others")
    lines.append("")
    if report.front.empty:
        lines.append("no candidate evaluated successfully yet")
    else:
        lines.append(f"front 0, {PICK_TEXT}:")
        headers = ["rank", "id", "acf"] + [header(c) for c in report.columns] + ["acf_share", "config"]
        rows = []
        for i, (_, row) in enumerate(report.front.iterrows(), start=1):
            cid = f"{int(row['candidate_id'])}" + (" (baseline)" if bool(row.get("is_baseline", False)) else "")
            cells = [str(i), cid, _short(row.get("acf"))]
            for c in report.columns:
                ratio = _ratio(report, row, c)
                cells.append(f"{float(row[c.column]):.4g}" + ("" if math.isnan(ratio) else f" ({ratio:.3f}x)"))
            rows.append(cells + [share_text(report, i - 1, row), _config_text(row.get("config"))])
        lines.append(_table(headers, rows))
    if report.all_shapes is not None:
        objective = report.columns[0].objective
        what = "speedup" if is_time(report.columns[0]) else "improvement (baseline / value)"
        lines += ["", (f"candidates that beat the baseline on every shape, by geomean {objective} {what} over "
                       "shapes, then worst shape (> 1 is better):")]
        if report.all_shapes.empty:
            lines.append("none")
        else:
            speed = [k for k in report.all_shapes.columns if str(k).startswith("speedup@")]
            headers = ["rank", "id", "acf", "geomean", "worst"] + speed + ["config"]
            rows = [[str(int(r["rank"])), str(int(r["candidate_id"])), _short(r["acf"]),
                     f"{r['geomean_speedup']:.3f}x", f"{r['worst_speedup']:.3f}x ({r['worst_shape']})"]
                    + [f"{r[k]:.3f}x" for k in speed] + [_config_text(r["config"])]
                    for _, r in report.all_shapes.iterrows()]
            lines.append(_table(headers, rows))
    if not report.excluded.empty:
        lines += ["", f"excluded from ranking ({len(report.excluded)}):"]
        for _, row in report.excluded.head(MAX_EXCLUDED_LINES).iterrows():
            lines.append(f"  candidate {int(row['candidate_id'])}: {row['reason']}")
        if len(report.excluded) > MAX_EXCLUDED_LINES:
            lines.append(f"  ... and {len(report.excluded) - MAX_EXCLUDED_LINES} more (see --json)")
    return "\n".join(lines)


def _acf(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _short(acf: Any) -> str:
    return _acf(acf)[:12] or "-"


def _config_text(text: Any) -> str:
    config = _config(text)
    if isinstance(config, dict):
        return " ".join(f"{k}={v}" for k, v in config.items()) or "{}"
    return "" if config is None else str(config)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*headers), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*r).rstrip() for r in rows]
    return "\n".join(line.rstrip() for line in out)
