"""FrontReport → JSON (``paretotune front --json``, ``run --json``, the service) and → a DataFrame (the API).

One reading of every number (:mod:`paretotune.pareto.convention`): beside each raw value its ``gain`` over the
baseline, > 1 better (``baseline / value`` where lower is better, a runtime's speedup; ``value / baseline``
where higher is better). Non-finite numbers become null. ``acf_share`` is given on every objective column.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any

import pandas as pd

from paretotune.front.model import FrontReport
from paretotune.pareto.convention import PICK_TEXT, RULE, unit_of
from paretotune.store import ObjectiveColumn


def render_json(report: FrontReport) -> str:
    """The front as one JSON document (indented; NaN and infinities as null)."""
    return json.dumps(front_document(report), indent=2, allow_nan=False)


def front_document(report: FrontReport) -> dict[str, Any]:
    """The JSON document as plain Python data: what ``render_json`` prints and the service returns."""
    return {
        "run_dir": str(report.run_dir),
        "objectives": [asdict(c) for c in report.columns],
        "n_evaluated": report.n_evaluated,
        "baseline": None if report.baseline is None else {
            "candidate_id": int(report.baseline["candidate_id"]),
            "values": {c.column: _num(report.baseline[c.column]) for c in report.columns},
            "units": {c.column: unit_of(c) for c in report.columns},
        },
        "front_order": PICK_TEXT,
        "convention": RULE.removeprefix("numbers: "),
        "hypervolume": _num(report.hypervolume),
        "hypervolume_left_out": list(report.constant),
        "front": [
            {"rank": i, "candidate_id": int(row["candidate_id"]), "acf": acf_text(row.get("acf")),
             "config": config_value(row.get("config")), "is_baseline": bool(row.get("is_baseline", False)),
             "crowding": _num(row["crowding"]),
             "acf_share": None if report.acf_shares[i - 1] is None else
             {c: _num(v) for c, v in report.acf_shares[i - 1].items()},
             "values": {c.column: _cell(report, row, c) for c in report.columns}}
            for i, (_, row) in enumerate(report.front.iterrows(), start=1)
        ],
        "excluded": [{"candidate_id": int(row["candidate_id"]), "status": str(row.get("status", "")),
                      "reason": row["reason"]} for _, row in report.excluded.iterrows()],
        "all_shapes": None if report.all_shapes is None else [
            {"rank": int(row["rank"]), "candidate_id": int(row["candidate_id"]), "acf": acf_text(row["acf"]),
             "config": config_value(row["config"]), "geomean_speedup": _num(row["geomean_speedup"]),
             "worst_speedup": _num(row["worst_speedup"]), "worst_shape": row["worst_shape"],
             "speedups": {k.split("@", 1)[1]: _num(v) for k, v in row.items() if str(k).startswith("speedup@")}}
            for _, row in report.all_shapes.iterrows()
        ],
    }


def front_table(report: FrontReport) -> pd.DataFrame:
    """Front 0 as a DataFrame in the table's order: raw values plus ``gain:<col>`` (> 1 better)."""
    rows = []
    for _, row in report.front.iterrows():
        out: dict[str, Any] = {"candidate_id": int(row["candidate_id"]), "acf": acf_text(row.get("acf")),
                               "is_baseline": bool(row.get("is_baseline", False)),
                               "config": config_value(row.get("config"))}
        for c in report.columns:
            out[c.column] = float(row[c.column])
            out[f"gain:{c.column}"] = report.ratio(row, c)
        rows.append(out)
    return pd.DataFrame(rows)


def acf_text(value: Any) -> str:
    """The ACF's sha, or '' for none (a missing value reads as NaN in the table)."""
    return value if isinstance(value, str) else ""


def config_value(text: Any) -> Any:
    """The stored config JSON as a dict; anything unparsable as it is."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _num(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _cell(report: FrontReport, row: pd.Series, column: ObjectiveColumn) -> dict[str, Any]:
    """Raw value, unit and its gain over the baseline (null where undefined)."""
    return {"value": _num(float(row[column.column])), "unit": unit_of(column), "gain": _num(report.ratio(row, column))}
