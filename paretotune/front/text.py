"""FrontReport → the text ``paretotune front`` prints and ``paretotune run`` ends with.

Front 0 comes first, ordered by the knee pick (the header says so), each value beside its gain over the baseline
(:mod:`paretotune.pareto.convention`, > 1 better; a runtime's gain is its speedup); then the all-shapes pick for a
campaign of several shapes, then what could not be ranked. The ``acf_share`` column says what a candidate's ACF adds
over the same config without it (its no-ACF twin) on the first objective where that is defined; "no ACF" or "no twin"
otherwise.
"""
from __future__ import annotations

import math
from typing import Any

from paretotune.front.document import acf_text, config_value
from paretotune.front.model import FrontReport
from paretotune.pareto.convention import PICK_TEXT, RULE, header, kind, unit_of

MAX_EXCLUDED_LINES = 10


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
        lines.append(RULE)
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
                ratio = report.ratio(row, c)
                cells.append(f"{float(row[c.column]):.4g}" + ("" if math.isnan(ratio) else f" ({ratio:.3f}x)"))
            rows.append(cells + [report.share_text(i - 1, row), _config_text(row.get("config"))])
        lines.append(_table(headers, rows))
    lines += _all_shapes(report)
    if not report.excluded.empty:
        lines += ["", f"excluded from ranking ({len(report.excluded)}):"]
        for _, row in report.excluded.head(MAX_EXCLUDED_LINES).iterrows():
            lines.append(f"  candidate {int(row['candidate_id'])}: {row['reason']}")
        if len(report.excluded) > MAX_EXCLUDED_LINES:
            lines.append(f"  ... and {len(report.excluded) - MAX_EXCLUDED_LINES} more (see --json)")
    return "\n".join(lines)


def _all_shapes(report: FrontReport) -> list[str]:
    """The candidates that beat the baseline on every shape, for a campaign of several shapes."""
    if report.all_shapes is None:
        return []
    objective = report.columns[0].objective
    lines = ["", (f"candidates that beat the baseline on every shape, by geomean {objective} "
                  f"{kind(report.columns[0])} over shapes, then worst shape (> 1 is better):")]
    if report.all_shapes.empty:
        return lines + ["none"]
    speed = [k for k in report.all_shapes.columns if str(k).startswith("speedup@")]
    headers = ["rank", "id", "acf", "geomean", "worst"] + speed + ["config"]
    rows = [[str(int(r["rank"])), str(int(r["candidate_id"])), _short(r["acf"]),
             f"{r['geomean_speedup']:.3f}x", f"{r['worst_speedup']:.3f}x ({r['worst_shape']})"]
            + [f"{r[k]:.3f}x" for k in speed] + [_config_text(r["config"])]
            for _, r in report.all_shapes.iterrows()]
    return lines + [_table(headers, rows)]


def _short(acf: Any) -> str:
    return acf_text(acf)[:12] or "-"


def _config_text(text: Any) -> str:
    config = config_value(text)
    if isinstance(config, dict):
        return " ".join(f"{k}={v}" for k, v in config.items()) or "{}"
    return "" if config is None else str(config)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*headers), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*r).rstrip() for r in rows]
    return "\n".join(line.rstrip() for line in out)
