"""Reports people look at: ReportData (pure numbers and tables), then an HTML page and PNG files drawn from it.

``data`` holds the records, ``build`` makes them from a run (its front from :mod:`paretotune.front`),
``summary`` the campaign summary, ``verdicts`` validation.csv's verdicts.

``load_report_data(run_dir)`` reads a run; ``render_html(data)`` needs plotly and ``write_pngs(data, dir)``
needs matplotlib, both imported only when called.
"""
from __future__ import annotations

from pathlib import Path

from paretotune.report.build import build_report_data, load_report_data
from paretotune.report.data import ReportData
from paretotune.report.verdicts import with_verdicts

__all__ = ["ReportData", "build_report_data", "load_report_data", "render_html", "with_verdicts", "write_pngs"]


def render_html(data: ReportData) -> str:
    """One self-contained HTML page (plotly.js inlined) for ``data``."""
    from paretotune.report.html import render_html as render

    return render(data)


def write_pngs(data: ReportData, out_dir: Path) -> list[Path]:
    """PNG files of the main plots in ``out_dir``; returns their paths."""
    from paretotune.report.png import write_pngs as write

    return write(data, out_dir)
