"""ReportData → PNG files of the main plots, drawn with matplotlib.

PNGs go where HTML cannot: a README, a chat message, a slide. matplotlib rather than plotly's kaleido
export, which needs a browser build fetched at run time and fails offline. Figures are built with
``matplotlib.figure.Figure`` directly, never pyplot, so no global backend or figure state is touched.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from paretotune.extras import require
from paretotune.report.data import PairPlot, ReportData
from paretotune.report.verdicts import has_speedups
from paretotune.report.figures import (
    BASELINE_COLOR,
    FRONT_COLOR,
    SHAPE_COLORS,
    VERDICT_COLORS,
    axis_title,
    pair_title,
)

DPI = 110
MAX_PAIRS_PER_PNG = 6


def write_pngs(data: ReportData, out_dir: Path) -> list[Path]:
    """Write the main plots as PNG files into ``out_dir``; return their paths in page order."""
    new_figure = _figure_class()
    out_dir.mkdir(parents=True, exist_ok=True)
    drawn: list[tuple[str, Any]] = []
    if data.pairs:
        drawn.append(("front.png", _pairs(new_figure, data.pairs[:MAX_PAIRS_PER_PNG])))
    if data.values is not None:
        drawn.append(("values.png", _values(new_figure, data)))
    if data.shapes is not None:
        drawn.append(("shapes.png", _shapes(new_figure, data)))
    if data.parallel is not None:
        drawn.append(("parallel.png", _parallel(new_figure, data)))
    if data.progress is not None:
        drawn.append(("hypervolume.png", _progress(new_figure, data)))
    if data.validation is not None and has_speedups(data.validation):
        drawn.append(("validation.png", _validation(new_figure, data)))
    paths = []
    for name, fig in drawn:
        path = out_dir / name
        fig.savefig(path, dpi=DPI, bbox_inches="tight")
        paths.append(path)
    return paths


def _figure_class() -> Any:
    return require("matplotlib.figure", "report", "PNG output", instead="pass --no-png").Figure


def require_matplotlib() -> None:
    """The one-line error for missing matplotlib now, before a caller makes any folder or file."""
    _figure_class()


def _pairs(new_figure: Any, pairs: list[PairPlot]) -> Any:
    n = len(pairs)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig = new_figure(figsize=(5.2 * cols, 4.3 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, pair in zip(axes.flat, pairs, strict=False):
        _pair(ax, pair)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def _pair(ax: Any, pair: PairPlot) -> None:
    pts = pair.points
    sizes = 25 + 30 * np.sqrt(pts["count"].to_numpy(dtype=float) - 1)
    dominated = pts["front"].to_numpy() > 0
    if dominated.any():
        ax.scatter(pts["x"][dominated], pts["y"][dominated], s=sizes[dominated], c=pts["front"][dominated],
                   cmap="Blues_r", vmin=0, vmax=max(2, int(pts["front"].max()) * 1.3), edgecolors="#555",
                   linewidths=0.5, label="dominated (darker = closer to front 0)")
    if (~dominated).any():
        ax.scatter(pts["x"][~dominated], pts["y"][~dominated], s=sizes[~dominated] + 30, c=FRONT_COLOR,
                   edgecolors="#400", linewidths=0.8, label="Pareto front 0", zorder=3)
    if pair.baseline is not None:
        ax.scatter([pair.baseline[0]], [pair.baseline[1]], marker="*", s=260, c=BASELINE_COLOR, label="baseline",
                   zorder=4)
    ax.set_xscale("log" if pair.log_x else "linear")
    ax.set_yscale("log" if pair.log_y else "linear")
    ax.set_xlabel(axis_title(pair.x, pair.log_x), fontsize=9)
    ax.set_ylabel(axis_title(pair.y, pair.log_y), fontsize=9)
    ax.set_title(pair_title(pair), fontsize=11)
    ax.grid(alpha=0.3)


def _values(new_figure: Any, data: ReportData) -> Any:
    assert data.values is not None
    plot = data.values
    fig = new_figure(figsize=(7, 4.2))
    ax = fig.subplots()
    others = plot.points.loc[~plot.points["is_baseline"], "value"]
    if len(others):
        ax.hist(others, bins=min(30, max(5, len(others) // 2)), color="#6baed6", edgecolor="#fff")
    best = plot.points.loc[plot.points["front"] == 0, "value"]
    if len(best):
        ax.axvline(float(best.iloc[0]), color=FRONT_COLOR, lw=3, label=f"best {float(best.iloc[0]):.4g}")
    if plot.baseline is not None:
        ax.axvline(plot.baseline, color=BASELINE_COLOR, ls="--", lw=2, label=f"baseline {plot.baseline:.4g}")
    ax.set_xlabel(axis_title(plot.column))
    ax.set_ylabel("candidates")
    ax.set_title(f"{plot.column.column}: every successful candidate")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig


def _shapes(new_figure: Any, data: ReportData) -> Any:
    assert data.shapes is not None
    chart = data.shapes
    n = len(chart.objectives)
    fig = new_figure(figsize=(max(7.0, 0.9 * len(chart.candidate_ids) + 3), 2.8 * n + 0.6))
    axes = fig.subplots(n, 1, squeeze=False, sharex=True)
    x = np.arange(len(chart.candidate_ids))
    width = 0.8 / len(chart.shapes)
    for ax, objective in zip(axes[:, 0], chart.objectives, strict=True):
        part = chart.bars.loc[chart.bars["objective"] == objective]
        finite = part["improvement"].replace([np.inf], np.nan)
        cap = 1.25 * float(finite.max()) if finite.notna().any() else 2.0
        for k, shape in enumerate(chart.shapes):
            values = (part.loc[part["shape"] == shape].set_index("candidate_id")["improvement"]
                      .reindex(chart.candidate_ids).to_numpy(dtype=float))
            ax.bar(x + (k - (len(chart.shapes) - 1) / 2) * width, np.where(np.isinf(values), cap, values), width,
                   label=shape, color=SHAPE_COLORS[k % len(SHAPE_COLORS)])
        ax.axhline(1.0, color=BASELINE_COLOR, ls="--", lw=1)
        ax.set_ylabel("gain")
        ax.set_title(f"{objective}: gain over the baseline (> 1 is better)", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[-1, 0].set_xticks(x, [f"#{i}" for i in chart.candidate_ids])
    axes[-1, 0].set_xlabel("candidate")
    axes[0, 0].legend(title="shape", frameon=False, ncol=len(chart.shapes))
    fig.tight_layout()
    return fig


def _parallel(new_figure: Any, data: ReportData) -> Any:
    assert data.parallel is not None
    rows = data.parallel.rows
    columns = data.parallel.columns
    fig = new_figure(figsize=(max(7.0, 1.6 * len(columns)), 4.5))
    ax = fig.subplots()
    scaled = np.empty((len(rows), len(columns)))
    for j, c in enumerate(columns):
        v = rows[c.column].to_numpy(dtype=float)
        low, high = v.min(), v.max()
        s = (v - low) / (high - low) if high > low else np.full_like(v, 0.5)
        scaled[:, j] = 1 - s if c.direction == "max" else s  # better is lower on every axis
    x = np.arange(len(columns))
    for j, c in enumerate(columns):  # each axis with its real best and worst values
        v = rows[c.column].to_numpy(dtype=float)
        best, worst = (v.max(), v.min()) if c.direction == "max" else (v.min(), v.max())
        ax.axvline(j, color="#888", lw=0.8, zorder=0)
        ax.annotate(f"{best:.4g}", (j, 0), xytext=(0, -4), textcoords="offset points", ha="center", va="top",
                    fontsize=8)
        ax.annotate(f"{worst:.4g}", (j, 1), xytext=(0, 4), textcoords="offset points", ha="center", va="bottom",
                    fontsize=8)
    style = {"dominated": ("#b9c7d9", 0.8, 1), "front 0": (FRONT_COLOR, 2.0, 2), "baseline": (BASELINE_COLOR, 2.5, 3)}
    for group in ("dominated", "front 0", "baseline"):
        color, lw, z = style[group]
        sel = rows["group"].to_numpy() == group
        for i, line in enumerate(scaled[sel]):
            ax.plot(x, line, color=color, lw=lw, zorder=z, label=group if i == 0 else None)
    ax.set_xticks(x, [f"{c.column}\n({c.direction})" for c in columns], fontsize=8)
    ax.tick_params(axis="x", pad=14)
    ax.set_yticks([0, 1], ["best", "worst"])
    ax.set_ylim(-0.08, 1.08)
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title("All objectives (scaled per axis; better is lower)", pad=16)
    ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3)
    fig.tight_layout()
    return fig


def _progress(new_figure: Any, data: ReportData) -> Any:
    assert data.progress is not None
    table = data.progress.table
    fig = new_figure(figsize=(7, 4))
    ax = fig.subplots()
    ax.step(table["evaluation"], table["hypervolume"], where="post", lw=2.2, color="#1f77b4", label="hypervolume")
    failed = table.loc[table["status"] != "ok"]
    if len(failed):
        ax.scatter(failed["evaluation"], failed["hypervolume"], marker="x", color=FRONT_COLOR, label="failed")
    ax.set_xlabel("evaluation")
    ax.set_ylabel("hypervolume over the baseline")
    ax.set_title("Search progress (baseline-ratio space)")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig


def _validation(new_figure: Any, data: ReportData) -> Any:
    assert data.validation is not None
    table = data.validation.copy()
    table["speedup"] = pd.to_numeric(table["speedup"], errors="coerce")
    table = table.loc[np.isfinite(table["speedup"].to_numpy(dtype=float))].reset_index(drop=True)
    shapes = table["shape"] if "shape" in table else pd.Series("", index=table.index)
    labels = [("control" if role == "control" else f"#{int(cid)}") + f" @{shape}"
              for cid, role, shape in zip(table["candidate_id"], table["role"], shapes, strict=True)]
    fig = new_figure(figsize=(max(6.0, 0.7 * len(table) + 2), 4))
    ax = fig.subplots()
    speedup = table["speedup"].to_numpy(dtype=float)
    low = pd.to_numeric(table.get("ci_low", table["speedup"]), errors="coerce").fillna(table["speedup"]).to_numpy()
    high = pd.to_numeric(table.get("ci_high", table["speedup"]), errors="coerce").fillna(table["speedup"]).to_numpy()
    for verdict in table["verdict"].unique():
        sel = (table["verdict"] == verdict).to_numpy()
        spread = np.vstack([speedup[sel] - low[sel], high[sel] - speedup[sel]])
        ax.errorbar(np.flatnonzero(sel), speedup[sel], yerr=spread, fmt="o", ms=7, capsize=4,
                    color=VERDICT_COLORS.get(str(verdict), "#333"), label=str(verdict))
    ax.axhline(1.0, color=BASELINE_COLOR, ls="--", lw=1)
    ax.set_xticks(np.arange(len(table)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("speedup (x baseline)")
    ax.set_title("Validation: re-measured speedup with its confidence interval")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig
