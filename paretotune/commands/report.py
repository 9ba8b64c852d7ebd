"""Write a run's report: one self-contained HTML page with Pareto plots and tables, plus PNGs of the main plots.

The page needs no network (plotly.js is inlined), so it can be attached to a review as one file. By default
everything goes to ``RUN_DIR/report/``: ``report.html``, ``front.png`` (the objective pairs), and where the
run supports them ``shapes.png``, ``parallel.png``, ``hypervolume.png`` and ``validation.png``.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from paretotune.errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory written by 'paretotune run'")
    parser.add_argument("--out", type=Path, help="output folder (default: RUN_DIR/report)")
    parser.add_argument("--no-png", action="store_true", help="write only the HTML page")
    parser.add_argument("--json", action="store_true", help="print what was written as JSON")


def main(args: argparse.Namespace) -> int:
    from paretotune.report import load_report_data, render_html, write_pngs

    data = load_report_data(Path(args.run_dir))
    out = Path(args.out) if args.out else Path(args.run_dir) / "report"
    html = render_html(data)  # plotly, and matplotlib for the PNGs, before anything is made: a missing extra
    if not args.no_png:  # leaves no empty folder behind
        from paretotune.report.png import require_matplotlib

        require_matplotlib()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{out}: cannot create the report folder ({exc.strerror})") from None
    page = out / "report.html"
    page.write_text(html, encoding="utf-8")
    pngs = [] if args.no_png else write_pngs(data, out)
    if args.json:
        print(json.dumps({"report": str(page), "plots": len(data.plots()), "pngs": [str(p) for p in pngs]}, indent=2))
        return 0
    print(f"report: {page} ({len(data.plots())} plots)")
    for png in pngs:
        print(f"  {png}")
    return 0
