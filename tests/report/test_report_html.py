"""The HTML page and the PNG files, checked as files (the browser test renders them)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from paretotune.report import load_report_data, render_html, write_pngs

from .conftest import column, two_shape_run, write_run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def plot_names(page: str) -> list[str]:
    return re.findall(r'<figure class="plot" data-plot="([^"]+)">', page)


def test_page_is_self_contained(tmp_path: Path) -> None:
    data = load_report_data(two_shape_run(tmp_path / "run"))
    page = render_html(data)
    assert plot_names(page) == data.plots()
    assert page.count("Plotly.newPlot(") == len(data.plots())
    # no external resource: no script/link/img fetched from anywhere, plotly.js inlined exactly once
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)=', page)
    from plotly.offline import get_plotlyjs

    assert page.count(get_plotlyjs()[:2000]) == 1  # the library is inlined once, not per plot
    for section in ("summary", "tradeoffs", "shapes", "objectives", "progress", "front", "validation", "failures"):
        assert f'<section id="{section}">' in page
    assert "synthetic-two-shapes" in page and "compile timeout" in page  # the failure and its reason
    assert "Candidates that beat the baseline on every shape" in page
    assert "not validated yet" in page


def test_text_is_escaped(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [column("runtime")],
                    [{"candidate_id": 0, "is_baseline": True, "values": {"runtime": 1.0}},
                     {"candidate_id": 1, "status": "failed", "error": "<script>alert(1)</script>"}],
                    meta={"campaign": "<b>evil</b>"})
    page = render_html(load_report_data(run))
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>evil</b>" not in page and "&lt;b&gt;evil&lt;/b&gt;" in page


@pytest.mark.parametrize("case", ["only_baseline", "all_failed", "empty", "single_objective"])
def test_edge_cases_render(tmp_path: Path, case: str) -> None:
    columns = [column("runtime"), column("occupancy", "max")]
    rows = {
        "only_baseline": [{"candidate_id": 0, "is_baseline": True, "values": {"runtime": 1.0, "occupancy": 50.0}}],
        "all_failed": [{"candidate_id": 0, "is_baseline": True, "status": "failed", "error": "ptxas crashed"}],
        "empty": [],
        "single_objective": [{"candidate_id": 0, "is_baseline": True, "values": {"runtime": 1.0}},
                             {"candidate_id": 1, "values": {"runtime": 0.8}}],
    }[case]
    data = load_report_data(write_run(tmp_path / "run", columns[:1] if case == "single_objective" else columns,
                                      rows))
    page = render_html(data)
    assert plot_names(page) == data.plots()
    pngs = write_pngs(data, tmp_path / "png")
    assert all(p.read_bytes().startswith(PNG_MAGIC) for p in pngs)
    if case == "all_failed":
        assert data.plots() == [] and pngs == []
        assert "ptxas crashed" in page and "no candidate evaluated successfully" in page
    if case == "single_objective":
        assert [p.name for p in pngs] == ["values.png", "hypervolume.png"]


def test_pngs_of_the_quickstart_run(quickstart_run: Path, tmp_path: Path) -> None:
    data = load_report_data(quickstart_run)
    pngs = write_pngs(data, tmp_path)
    assert [p.name for p in pngs] == ["front.png", "hypervolume.png"]  # no parallel plot: only two objectives vary
    for png in pngs:
        blob = png.read_bytes()
        assert blob.startswith(PNG_MAGIC) and 5_000 < len(blob) < 200_000, (png, len(blob))


def test_pngs_of_two_shapes(tmp_path: Path) -> None:
    data = load_report_data(two_shape_run(tmp_path / "run"))
    names = [p.name for p in write_pngs(data, tmp_path / "png")]
    assert names == ["front.png", "shapes.png", "parallel.png", "hypervolume.png"]


def test_an_outlier_draws_on_a_log_axis_and_crowding_is_explained(tmp_path: Path) -> None:
    """The page and the PNG draw the log axis the data asks for (an outlier at 255 registers beside 30-40), and
    the front table says what its crowding column and an infinite crowding mean."""
    from paretotune.report.figures import pair_figure

    regs = [167, 30, 31, 32, 34, 36, 38, 40, 255]
    rows = [{"candidate_id": i, "is_baseline": i == 0,
             "values": {"registers": r, "occupancy": 100.0 * 16 / (16 + r)}} for i, r in enumerate(regs)]
    data = load_report_data(write_run(tmp_path / "run", [column("registers"), column("occupancy", "max")], rows))
    layout = pair_figure(data.pairs[0]).layout
    assert (layout.xaxis.type, layout.yaxis.type) == ("log", "linear")
    assert "log scale" in layout.xaxis.title.text
    (png,) = [p for p in write_pngs(data, tmp_path / "png") if p.name == "front.png"]
    assert png.read_bytes().startswith(PNG_MAGIC)
    page = render_html(data)
    assert "Crowding: the NSGA-II crowding distance" in page and "∞ for the points at either end" in page


def test_the_report_names_each_acf_by_where_it_came_from_and_what_it_changed(quickstart_run: Path) -> None:
    """A real quickstart run: each ACF on the front reads as a CompileIQ sample of ptxas 13.3 with what it changed
    in the build against its no-ACF twin (read here from the stored records), not only as a hash; the page says
    why its controls are not listed (CompileIQ's ACFs are encrypted)."""
    import json

    import pandas as pd

    from paretotune.pareto.attribution import config_key

    data = load_report_data(quickstart_run)
    page = render_html(data)
    results = pd.read_json(quickstart_run / "results.jsonl", lines=True, dtype={"acf": str})
    results["acf"] = results["acf"].fillna("")
    plain = {config_key(r["config"]): r for _, r in results.sort_values("candidate_id").iterrows() if not r["acf"]}
    acf_rows = [r for _, r in data.front.iterrows() if isinstance(r["acf"], str) and r["acf"]]
    assert acf_rows, "the quickstart's front holds an ACF candidate"
    named = 0
    for r in acf_rows:
        cid = int(r["candidate_id"])
        row = results.set_index("candidate_id").loc[cid]
        label = data.acf_labels[cid]
        assert label.startswith("CompileIQ sample, ptxas 13.3; ")
        twin = plain.get(config_key(row["config"]))
        assert twin is not None, "front 0's ACF configs get a no-ACF twin"
        mine, theirs = (json.loads(x)["wide"]["registers"] for x in (row["extra"], twin["extra"]))
        if mine != theirs:
            assert f"registers {theirs:g} -> {mine:g}" in label
        else:
            assert "same registers" in label
        cell = re.search(rf'<code title="{r["acf"]}">{r["acf"][:12]}</code><br><span class="acf-label">([^<]*)</span>',
                         page)
        assert cell is not None and cell.group(1).replace("&gt;", ">") == label
        named += 1
    assert named == len(acf_rows) and "ACFs are encrypted, so the controls one sets cannot be listed" in page
