"""ReportData → one self-contained HTML file: plotly.js is inlined once, so the page opens offline and can
be mailed or attached to a review as a single file.

Every plot sits in ``<figure class="plot" data-plot="NAME">`` (names from ``ReportData.plots()``). A small
script shows any JavaScript error at the top of the page, so a plot that fails to draw is visible rather than
an empty box.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from paretotune.extras import require
from paretotune.pareto.convention import RULE, kind, unit_of
from paretotune.report.acf_labels import UNREADABLE
from paretotune.report.cells import acf_cell, config_cell, esc, fmt, html_table, is_nan, note, section, times
from paretotune.report.data import ReportData
from paretotune.report.figures import figures

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#1d2b3a;color:#fff;padding:14px 28px}header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#c9d3de;font-size:13px}
nav{padding:8px 28px;background:#eef1f4;font-size:14px;position:sticky;top:0;z-index:10}
nav a{margin-right:16px;color:#1d4f91;text-decoration:none}
main{padding:8px 28px 40px}section{margin:22px 0}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:14px}
figure.plot{margin:0;background:#fff;border:1px solid #e2e2e2;border-radius:6px;padding:4px;min-width:0}
table{border-collapse:collapse;font-size:13px;background:#fff}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#f0f2f5}td.text,th.text{text-align:left}
dl.summary{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;font-size:14px;margin:0}
dl.summary dt{font-weight:600}dl.summary dd{margin:0}
.note{color:#555;font-style:italic;font-size:14px}.acf-label{font-size:12px;color:#444}.scroll{overflow-x:auto}
tr.baseline td{background:#f6f6f6}code{font-size:12px}
.verdict-faster{color:#1a7f1a;font-weight:600}.verdict-error,.verdict-control-flagged{color:#b42318;font-weight:600}
#render-errors{background:#fde8e8;color:#8a1c1c;padding:10px 28px;font-family:monospace;white-space:pre-wrap}
"""

# Shows uncaught errors on the page itself; the report test reads this box too.
ERROR_HOOK = """
window.addEventListener("error", function (e) {
  var box = document.getElementById("render-errors");
  if (!box) { return; }
  box.hidden = false;
  box.textContent += "JavaScript error: " + e.message + "\\n";
});
"""

SECTIONS = [("summary", "Summary"), ("tradeoffs", "Trade-offs"), ("shapes", "Across shapes"),
            ("objectives", "All objectives"), ("progress", "Search progress"), ("front", "Pareto front"),
            ("validation", "Validation"), ("failures", "Failures")]


def render_html(data: ReportData) -> str:
    """The whole page as one string."""
    get_plotlyjs = require("plotly.offline", "report", "the HTML report").get_plotlyjs
    plots = {name: _figure_html(name, fig) for name, fig in figures(data)}
    body = [
        _summary(data),
        _tradeoffs(data, plots),
        _shapes(data, plots) if data.shapes is not None or "shapes" in data.notes else "",
        section("objectives", "All objectives", [plots["parallel"]]) if "parallel" in plots else
        section("objectives", "All objectives", [note(data.notes.get(
            "parallel", "two objective columns or fewer: the scatter plots above show them all"))]),
        section("progress", "Search progress", [plots.get("progress") or note(data.notes.get("progress", ""))]
                + ([note("hypervolume leaves out " + ", ".join(data.progress.ignored)
                         + ": every candidate equals the baseline there")]
                   if data.progress is not None and data.progress.ignored else [])),
        _front(data),
        _validation(data, plots),
        _failures(data),
    ]
    present = {"shapes": data.shapes is not None or "shapes" in data.notes}
    nav = "".join(f'<a href="#{key}">{label}</a>' for key, label in SECTIONS if present.get(key, True))
    s = data.summary
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>paretotune report: {esc(s.campaign)}</title>", f"<style>{CSS}</style>",
        f"<script>{ERROR_HOOK}</script>",
        f'<script type="text/javascript">{get_plotlyjs()}</script>',
        "</head><body>",
        (f"<header><h1>paretotune report: {esc(s.campaign)}</h1>"
         f"<p>{esc(s.run_dir)}{' &middot; created ' + esc(s.created) if s.created else ''}</p></header>"),
        f"<nav>{nav}</nav>", '<div id="render-errors" hidden></div>',
        "<main>", *[b for b in body if b], "</main></body></html>",
    ])


def _figure_html(name: str, fig: Any) -> str:
    import plotly.io as pio

    div = pio.to_html(fig, full_html=False, include_plotlyjs=False, include_mathjax=False,
                      config={"displaylogo": False, "responsive": True})
    return f'<figure class="plot" data-plot="{esc(name)}">{div}</figure>'


# -- sections -----------------------------------------------------------------------------------------------
def _summary(data: ReportData) -> str:
    s = data.summary
    objectives = ", ".join(f"{esc(o)} ({'min' if d == 'min' else 'max'})" for o, d in s.objectives)
    versions = ", ".join(f"{esc(k)} {esc(v)}" for k, v in s.versions.items()) or "not recorded"
    counts = (f"{s.n_evaluated} evaluated (baseline included), {s.n_failed} failed, {s.n_excluded} excluded "
              f"from ranking, {s.n_front} on the Pareto front")
    if s.hypervolume is None:
        hv = "n/a (no successful baseline)"
    else:
        hv = (f"{s.hypervolume:.4g} (baseline-ratio space; 0 = no candidate is at least as good as the baseline on "
              "every objective at once, though one may still win on a single objective: see the front)")
    items = [("Kernel", f"<code>{esc(s.kernel)}</code>"), ("Shapes", "; ".join(esc(x) for x in s.shapes) or "-"),
             ("Objectives", objectives), ("Budget", esc(s.budget)), ("Target", esc(s.target)),
             ("Toolchain", versions), ("Seed", esc("-" if s.seed is None else str(s.seed))),
             ("Evaluations", counts), ("Hypervolume", hv),
             ("Numbers", esc(RULE.removeprefix("numbers: ")))]
    if data.baseline is not None:
        items.append(("Baseline", ", ".join(f"{esc(k)} = {fmt(v)}" for k, v in data.baseline.items())))
    if s.measurement:
        items.append(("Measurement", "<br>".join(esc(line) for line in s.measurement)))
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    parts = [f'<dl class="summary">{dl}</dl>']
    if "constant" in data.notes:
        parts.append(note("Constant objectives: " + data.notes["constant"]))
    return section("summary", "Summary", parts)


def _tradeoffs(data: ReportData, plots: dict[str, str]) -> str:
    figs = [html_ for name, html_ in plots.items() if name.startswith("pair:") or name == "values"]
    parts = []
    if figs:
        parts.append(note("Each point is one or more candidates with the same values (bigger = more); red points "
                          "are on Pareto front 0 over all objectives, so a red point can look dominated in one "
                          f"projection. The star is the baseline ({data.summary.baseline}, no ACF)."
                          if data.pairs else "One objective: the distribution of every successful candidate."))
        # auto-fill (not auto-fit) keeps the column width fixed while the figures are added one by one, so
        # plotly sizes each plot for its final cell rather than for the whole row
        parts.append(f'<div class="grid">{"".join(figs)}</div>' if len(figs) > 1 else figs[0])
    if data.pairs_omitted:
        parts.append(note(f"{data.pairs_omitted} more pairs not drawn (see the parallel-coordinates plot)."))
    if not figs:
        parts.append(note(data.notes.get("values") or data.notes.get("pairs", "nothing to plot")))
    return section("tradeoffs", "Trade-offs", parts)


def _shapes(data: ReportData, plots: dict[str, str]) -> str:
    if data.shapes is None:
        return section("shapes", "Across shapes", [note(data.notes.get("shapes", ""))])
    parts = [note(f"Shown: {data.shapes.selection}."), plots["shapes"]]
    table = data.all_shapes
    if table is not None:
        parts.append("<h3>Candidates that beat the baseline on every shape</h3>")
        if table.empty:
            parts.append(note("none"))
        else:
            speed = [c for c in table.columns if str(c).startswith("speedup@")]
            headers = ["rank", "id", "acf", "geomean", "worst", *speed, "config"]
            rows = [[str(int(r["rank"])), str(int(r["candidate_id"])),
                     acf_cell(r["acf"], data.acf_labels.get(int(r["candidate_id"]))),
                     times(r["geomean_speedup"]), f"{times(r['worst_speedup'])} ({esc(r['worst_shape'])})",
                     *[times(r[c]) for c in speed], config_cell(r["config"])]
                    for _, r in table.head(50).iterrows()]
            parts.append(html_table(headers, rows, text_columns={"acf", "config"}))
            if len(table) > 50:
                parts.append(note(f"... and {len(table) - 50} more (paretotune export has them all)."))
    return section("shapes", "Across shapes", parts)


def _front(data: ReportData) -> str:
    front = data.front
    if front.empty:
        return section("front", "Pareto front", [note("no candidate evaluated successfully")])
    headers = ["rank", "id", "gen", "acf"]
    for c in data.columns:
        unit = f" [{unit_of(c)}]" if unit_of(c) else ""
        headers += [c.column + unit, kind(c)]
    headers += ["crowding", "acf share", "config"]
    rows, classes = [], []
    for _, r in front.iterrows():
        cells = [str(int(r["rank"])), f"{int(r['candidate_id'])}{' (baseline)' if r['is_baseline'] else ''}",
                 str(int(r["generation"])), acf_cell(r["acf"], data.acf_labels.get(int(r["candidate_id"])))]
        for c in data.columns:
            ratio = r[f"{c.column} gain"]
            cells += [fmt(r[c.column]), "-" if is_nan(ratio) else f"{float(ratio):.3f}x"]
        cells += [fmt(r["crowding"]), esc(r.get("acf share", "")), config_cell(r["config"])]
        rows.append(cells)
        classes.append("baseline" if r["is_baseline"] else "")
    intro = note("Front 0 ordered by knee pick (each objective rescaled to [0, 1] over the front, smallest sum "
                 "first; of equal sums the simpler build first: no ACF, then fewer knobs changed from the baseline), "
                 "as 'paretotune front' prints it: row 1 is the one to ship. Each value beside its gain over the "
                  "baseline, > 1 is better: baseline / value where lower is better (a runtime's gain is its speedup: "
                  "1.15x is 15% faster; 2x registers is half as many), value / baseline where higher is better (1.5x "
                  "occupancy is 50% more). ACF share: the gain of the candidate over the same config without its "
                  "ACF (> 1: the ACF helped). Crowding: the NSGA-II crowding distance, how far a point "
                  "is from its neighbours on the front (larger = more isolated); ∞ for the points at either end "
                  "of an objective's range, which every front keeps. ACF files: <run>/acf/<sha>.acf. " + UNREADABLE)
    return section("front", f"Pareto front ({len(front)})",
                   [intro, html_table(headers, rows, text_columns={"acf", "acf share", "config"},
                                      row_classes=classes)])


def _validation(data: ReportData, plots: dict[str, str]) -> str:
    table = data.validation
    if table is None:
        return section("validation", "Validation", [note("not validated yet: run 'paretotune validate RUN_DIR' "
                                                         "on a GPU to re-measure the front against the baseline")])
    parts = []
    if (table["verdict"] == "control flagged").any():
        parts.append('<p class="verdict-control-flagged">The control (baseline against itself) differed from the '
                     "baseline (two-sided): the arms were not timed alike, so these verdicts are not to be "
                     "trusted and no artifact was written.</p>")
    if "validation" in plots:
        parts.append(plots["validation"])
    parts += _attribution(table)
    wanted = ["shape", "candidate_id", "role", "n", "speedup", "ci_low", "ci_high", "cohens_d", "p_value",
              "p_holm", "noise_floor", "gbps", "of_copy", "verdict", "failed"]
    columns = [c for c in wanted if c in table.columns]
    rows = []
    for _, r in table.iterrows():
        cells = []
        for c in columns:
            value = r[c]
            if c == "verdict":
                cells.append(f'<span class="verdict-{esc(str(value).replace(" ", "-"))}">{esc(value)}</span>')
            elif c in ("speedup", "ci_low", "ci_high"):
                cells.append(times(value))
            elif isinstance(value, str):
                cells.append(esc(value))
            else:
                cells.append(fmt(value))
        rows.append(cells)
    # why not significant, or the error; the bandwidth and the fraction of a device copy of the same bytes
    renamed = {"failed": "reasons", "gbps": "GB/s", "of_copy": "of copy"}
    headers = [renamed.get(c, c) for c in columns]
    parts.append(html_table(headers, rows, text_columns={"shape", "role", "verdict", "reasons"}))
    return section("validation", "Validation", parts)


def _attribution(table: pd.DataFrame) -> list[str]:
    """Per shape and candidate: total = config-only x ACF-only, each with its CI and p (validation.csv)."""
    if "acf_speedup" not in table.columns:
        return []
    cands = table[table["role"].astype(str) == "candidate"]
    if cands.empty:
        return []

    def ratio(r: pd.Series, point: str, low: str, high: str, p: str) -> str:
        if is_nan(r[point]):
            return "-"
        return f"{times(r[point])} [{times(r[low])}, {times(r[high])}] p={fmt(r[p])}"

    rows = []
    for _, r in cands.iterrows():
        share = ratio(r, "acf_speedup", "acf_ci_low", "acf_ci_high", "acf_p_holm")
        rows.append([esc(r["shape"]), str(int(r["candidate_id"])), ratio(r, "speedup", "ci_low", "ci_high", "p_holm"),
                     ratio(r, "config_speedup", "config_ci_low", "config_ci_high", "config_p_holm"),
                     "-" if is_nan(r["twin_id"]) else str(int(r["twin_id"])),
                     share if share != "-" else "no ACF share (no ACF, or no twin measured)"])
    intro = note("Attribution: total (candidate vs baseline) = config-only (the same config without ACF vs "
                 "baseline) x ACF-only (candidate vs that twin). Speedups, > 1 better; p Holm-adjusted.")
    return [intro, html_table(["shape", "id", "total", "config-only", "twin", "ACF-only"], rows,
                              text_columns={"shape", "total", "config-only", "ACF-only"})]


def _failures(data: ReportData) -> str:
    failures = data.failures
    if failures.empty:
        return section("failures", "Failures", [note("none: every evaluation produced usable values")])
    rows = [[str(int(r["candidate_id"])) + (" (baseline)" if bool(r["is_baseline"]) else ""),
             str(int(r["generation"])), esc(r["status"]), esc(r["reason"]), config_cell(r["config"])]
            for _, r in failures.iterrows()]
    return section("failures", f"Failures ({len(failures)})",
                   [note("Failed evaluations and rows with a missing or non-finite objective value are not ranked."),
                    html_table(["id", "gen", "status", "reason", "config"], rows,
                               text_columns={"status", "reason", "config"})])
