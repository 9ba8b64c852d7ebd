"""ReportData → plotly figures, one per plot that ``ReportData.plots()`` names, in the same order.

Kept apart from the page template so that the figures can be inspected (or shown in a notebook) on their own.
plotly is imported lazily: the rest of paretotune does not need it.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from paretotune.extras import require
from paretotune.report.data import PairPlot, ReportData
from paretotune.report.verdicts import has_speedups

if TYPE_CHECKING:
    from paretotune.store import ObjectiveColumn

FRONT_COLOR = "#d62728"
BASELINE_COLOR = "#111111"
SHAPE_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
VERDICT_COLORS = {"faster": "#2ca02c", "not significant": "#7f7f7f", "error": "#d62728",
                  "control ok": "#1f77b4", "control flagged": "#ff7f0e"}
HEIGHT = 420


def go() -> Any:
    """plotly.graph_objects, or a UserError that says how to install it."""
    return require("plotly.graph_objects", "report", "the HTML report")


def figures(data: ReportData) -> list[tuple[str, Any]]:
    """(plot name, plotly Figure) for every plot in ``data.plots()``."""
    out: list[tuple[str, Any]] = [(f"pair:{p.x.column}:{p.y.column}", pair_figure(p)) for p in data.pairs]
    if data.values is not None:
        out.append(("values", values_figure(data)))
    if data.shapes is not None:
        out.append(("shapes", shapes_figure(data)))
    if data.parallel is not None:
        out.append(("parallel", parallel_figure(data)))
    if data.progress is not None:
        out.append(("progress", progress_figure(data)))
    if data.validation is not None and has_speedups(data.validation):
        out.append(("validation", validation_figure(data)))
    return out


def axis_title(column: ObjectiveColumn, log: bool = False) -> str:
    return (f"{column.column} ({'lower' if column.direction == 'min' else 'higher'} is better"
            f"{', log scale' if log else ''})")


def _layout(fig: Any, title: str, **extra: Any) -> Any:
    layout = {"title": {"text": title, "x": 0.01, "font": {"size": 15}}, "template": "plotly_white",
              "height": HEIGHT, "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
              "legend": {"orientation": "h", "y": -0.18}}
    fig.update_layout(**{**layout, **extra})
    return fig


def pair_figure(pair: PairPlot) -> Any:
    g = go()
    fig = g.Figure()
    pts = pair.points
    hover = "candidates %{customdata[0]}<br>front %{customdata[1]}<br>x %{x:.4g}, y %{y:.4g}<extra></extra>"
    dominated = pts.loc[pts["front"] > 0]
    if len(dominated):
        fig.add_trace(g.Scatter(
            x=dominated["x"], y=dominated["y"], mode="markers", name="dominated (darker = closer to front 0)",
            customdata=np.c_[dominated["ids"], dominated["front"]], hovertemplate=hover,
            marker={"size": _sizes(dominated["count"]), "color": dominated["front"], "colorscale": "Blues",
                    "reversescale": True, "cmin": 1, "cmax": max(2, int(pts["front"].max())),
                    "line": {"width": 0.5, "color": "#555"}, "opacity": 0.85}))
    front = pts.loc[pts["front"] == 0]
    if len(front):
        fig.add_trace(g.Scatter(
            x=front["x"], y=front["y"], mode="markers", name="Pareto front 0", customdata=np.c_[front["ids"],
                                                                                               front["front"]],
            hovertemplate=hover, marker={"size": _sizes(front["count"]) + 3, "color": FRONT_COLOR,
                                         "line": {"width": 1, "color": "#400"}}))
    if pair.baseline is not None:
        fig.add_trace(g.Scatter(x=[pair.baseline[0]], y=[pair.baseline[1]], mode="markers", name="baseline",
                                hovertemplate="baseline<br>x %{x:.4g}, y %{y:.4g}<extra></extra>",
                                marker={"symbol": "star", "size": 17, "color": BASELINE_COLOR}))
    return _layout(fig, pair_title(pair), xaxis_title=axis_title(pair.x, pair.log_x),
                   yaxis_title=axis_title(pair.y, pair.log_y), xaxis_type="log" if pair.log_x else "linear",
                   yaxis_type="log" if pair.log_y else "linear")


def pair_title(pair: PairPlot) -> str:
    if pair.x.shape != pair.y.shape:  # one objective, two shapes
        return f"{pair.y.column} vs {pair.x.column}"
    shape = f" on {pair.x.shape}" if pair.x.column != pair.x.objective else ""
    return f"{pair.y.objective} vs {pair.x.objective}{shape}"


def _sizes(count: pd.Series) -> np.ndarray:
    """Marker size grows with the number of candidates at the same point (static objectives repeat a lot)."""
    return np.asarray(7 + 4 * np.sqrt(count.to_numpy(dtype=float) - 1))


def values_figure(data: ReportData) -> Any:
    assert data.values is not None
    g = go()
    plot = data.values
    pts = plot.points
    fig = g.Figure()
    others = pts.loc[~pts["is_baseline"]]
    fig.add_trace(g.Histogram(x=others["value"], name="candidates", marker={"color": "#6baed6"}, opacity=0.9))
    best = pts.loc[pts["front"] == 0, "value"]
    if len(best):
        fig.add_vline(x=float(best.iloc[0]), line={"color": FRONT_COLOR, "width": 3},
                      annotation_text=f"best {float(best.iloc[0]):.4g}")
    if plot.baseline is not None:
        fig.add_vline(x=plot.baseline, line={"color": BASELINE_COLOR, "dash": "dash", "width": 2},
                      annotation_text=f"baseline {plot.baseline:.4g}", annotation_position="top left")
    return _layout(fig, f"{plot.column.column}: every successful candidate", xaxis_title=axis_title(plot.column),
                   yaxis_title="candidates", bargap=0.05)


def shapes_figure(data: ReportData) -> Any:
    assert data.shapes is not None
    from plotly.subplots import make_subplots

    g = go()
    chart = data.shapes
    bars = chart.bars
    fig = make_subplots(rows=len(chart.objectives), cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=list(chart.objectives))
    labels = [f"#{i}" for i in chart.candidate_ids]
    for row, objective in enumerate(chart.objectives, start=1):
        part = bars.loc[bars["objective"] == objective]
        finite = part["improvement"].replace([np.inf], np.nan)
        cap = 1.25 * float(finite.max()) if finite.notna().any() else 2.0
        for k, shape in enumerate(chart.shapes):
            sel = part.loc[part["shape"] == shape].set_index("candidate_id").reindex(chart.candidate_ids)
            values = sel["improvement"].to_numpy(dtype=float)
            shown = np.where(np.isinf(values), cap, values)
            fig.add_trace(g.Bar(x=labels, y=shown, name=shape, legendgroup=shape, showlegend=row == 1,
                                marker={"color": SHAPE_COLORS[k % len(SHAPE_COLORS)]},
                                text=[_times(v) for v in values], textposition="outside", cliponaxis=False,
                                hovertemplate=f"{objective} on {shape}<br>candidate %{{x}}: %{{text}}<extra></extra>"),
                          row=row, col=1)
        fig.add_hline(y=1.0, line={"color": BASELINE_COLOR, "dash": "dash", "width": 1}, row=row, col=1)
        fig.update_yaxes(title_text="gain", row=row, col=1)
    return _layout(fig, "Per shape: gain over the baseline (> 1 is better)", barmode="group",
                   height=max(HEIGHT, 260 * len(chart.objectives) + 80))


def _times(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    return "∞" if math.isinf(value) else f"{value:.2f}x"


GROUP_CODE = {"dominated": 0, "front 0": 1, "baseline": 2}


def parallel_figure(data: ReportData) -> Any:
    assert data.parallel is not None
    g = go()
    rows = data.parallel.rows.assign(code=lambda f: f["group"].map(GROUP_CODE)).sort_values("code", kind="stable")
    dims = []
    for c in data.parallel.columns:
        values = rows[c.column].to_numpy(dtype=float)
        low, high = float(values.min()), float(values.max())
        dim: dict[str, Any] = {"label": f"{c.column} ({c.direction})", "values": values}
        if low == high:  # a constant column: one tick at its value, in the middle
            low, high = low - 0.5, high + 0.5
            dim["tickvals"] = [low + 0.5]
        # "better" is always at the bottom: reverse the axis of "max" columns
        dim["range"] = [high, low] if c.direction == "max" else [low, high]
        dims.append(dim)
    fig = g.Figure(g.Parcoords(
        dimensions=dims,
        line={"color": rows["code"], "cmin": 0, "cmax": 2, "showscale": False,
              "colorscale": [[0, "#b9c7d9"], [0.5, FRONT_COLOR], [1, BASELINE_COLOR]]}))
    return _layout(fig, "All objectives (better is lower on every axis; red: front 0, black: baseline)",
                   margin={"l": 80, "r": 80, "t": 110, "b": 40})


def progress_figure(data: ReportData) -> Any:
    assert data.progress is not None
    g = go()
    table = data.progress.table
    fig = g.Figure(g.Scatter(x=table["evaluation"], y=table["hypervolume"], mode="lines", line_shape="hv",
                             name="hypervolume", line={"color": "#1f77b4", "width": 2.5},
                             customdata=table["candidate_id"],
                             hovertemplate="evaluation %{x} (candidate %{customdata})<br>HV %{y:.4g}<extra></extra>"))
    failed = table.loc[table["status"] != "ok"]
    if len(failed):
        fig.add_trace(g.Scatter(x=failed["evaluation"], y=failed["hypervolume"], mode="markers", name="failed",
                                marker={"symbol": "x", "color": FRONT_COLOR, "size": 8}))
    title = "Search progress: hypervolume over the baseline, in baseline-ratio space"
    return _layout(fig, title, xaxis_title="evaluation", yaxis_title="hypervolume (0 = nothing beats the baseline)")


def validation_figure(data: ReportData) -> Any:
    assert data.validation is not None
    g = go()
    table = data.validation.copy()
    table["speedup"] = pd.to_numeric(table["speedup"], errors="coerce")
    table = table.loc[np.isfinite(table["speedup"].to_numpy(dtype=float))]
    table["label"] = [("control" if role == "control" else f"#{int(cid)}" + (" no-ACF twin" if role == "twin" else ""))
                      + f" @{shape}"
                      for cid, role, shape in zip(table["candidate_id"], table["role"],
                                                  table.get("shape", pd.Series("", index=table.index)), strict=True)]
    fig = g.Figure()
    for verdict, part in table.groupby("verdict", sort=False):
        low = pd.to_numeric(part.get("ci_low"), errors="coerce") if "ci_low" in part else part["speedup"]
        high = pd.to_numeric(part.get("ci_high"), errors="coerce") if "ci_high" in part else part["speedup"]
        fig.add_trace(g.Scatter(
            x=part["label"], y=part["speedup"], mode="markers", name=str(verdict),
            marker={"size": 11, "color": VERDICT_COLORS.get(str(verdict), "#333")},
            error_y={"type": "data", "symmetric": False, "array": (high - part["speedup"]).fillna(0),
                     "arrayminus": (part["speedup"] - low).fillna(0)},
            hovertemplate="%{x}: %{y:.4f}x<extra>" + str(verdict) + "</extra>"))
    fig.add_hline(y=1.0, line={"color": BASELINE_COLOR, "dash": "dash", "width": 1})
    return _layout(fig, "Validation: re-measured speedup over the baseline with its confidence interval",
                   yaxis_title="speedup (x baseline)", xaxis_title="candidate @ shape")
