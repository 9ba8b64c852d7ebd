"""Open the report of a real CPU quickstart run in headless Chromium: every plot draws, nothing logs an error.

Chromium runs once per page with ``--dump-dom`` (the DOM after scripts ran) and ``--screenshot``, and with
``--enable-logging=stderr`` so that every console message and uncaught exception shows up as a
``CONSOLE`` line. The only lines tolerated are the GPU driver's performance notices that software WebGL
(used by the parallel-coordinates plot) emits in a headless, GPU-less browser.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from paretotune.cli import main as cli_main
from tests.browsers import chromium
from paretotune.report import load_report_data
from paretotune.store import RunDir

from .conftest import two_shape_run, validation_frame

CONSOLE = re.compile(r":CONSOLE(?::\d+)?\] \"(?P<message>.*)\", source: (?P<source>.*)$")
# software WebGL in a GPU-less headless browser: performance notices from the GL driver, not page errors
HARMLESS = re.compile(r"^\[\.WebGL-0x[0-9a-f]+\]GL Driver Message \(OpenGL, Performance, ")
FIGURE = re.compile(r'<figure class="plot" data-plot="([^"]+)">(.*?)</figure>', re.DOTALL)


@dataclass(frozen=True)
class Rendered:
    dom: str
    console: list[str]  # console messages other than the harmless GL notices
    screenshot: Path


def render(page: Path, screenshot: Path) -> Rendered:
    env = dict(os.environ, HOME=str(screenshot.parent))  # chromium writes a profile under HOME
    proc = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader",
         "--hide-scrollbars", "--window-size=1400,4200", "--virtual-time-budget=20000",
         "--enable-logging=stderr", "--v=0", f"--user-data-dir={screenshot.parent / 'profile'}",
         f"--screenshot={screenshot}", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=180, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    messages = [m.group("message") for m in map(CONSOLE.search, proc.stderr.splitlines()) if m]
    return Rendered(dom=proc.stdout, console=[m for m in messages if not HARMLESS.match(m)], screenshot=screenshot)


def check_every_plot_rendered(rendered: Rendered, expected: list[str]) -> None:
    assert rendered.console == [], f"console messages: {rendered.console}"
    figures = FIGURE.findall(rendered.dom)
    assert [name for name, _ in figures] == expected
    for name, body in figures:
        # plotly draws each plot into <svg class="main-svg"> layers; a failed newPlot leaves an empty div
        assert 'class="main-svg"' in body, f"plot {name} did not render"
        assert 'class="plot-container plotly"' in body, f"plot {name} has no plotly container"
    errors = re.search(r'<div id="render-errors"( hidden(="")?)?>(.*?)</div>', rendered.dom, re.DOTALL)
    assert errors is not None and errors.group(1) and errors.group(3) == "", "the page caught a JavaScript error"
    blob = rendered.screenshot.read_bytes()
    assert blob.startswith(b"\x89PNG") and len(blob) > 50_000


def test_quickstart_report_renders(quickstart_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = [int(i) for i in RunDir(quickstart_copy).results()["candidate_id"] if i > 0][:3]
    validation_frame("wide", ids).to_csv(quickstart_copy / "validation.csv", index=False)
    assert cli_main(["report", str(quickstart_copy)]) == 0
    page = quickstart_copy / "report" / "report.html"
    assert f"report: {page}" in capsys.readouterr().out
    expected = load_report_data(quickstart_copy).plots()
    # no parallel plot: spill bytes are constant, two objectives vary (the two-shape report draws one)
    assert {"progress", "validation"} <= set(expected) and expected[0].startswith("pair:")
    rendered = render(page, tmp_path / "quickstart.png")
    check_every_plot_rendered(rendered, expected)
    assert "faster" in rendered.dom and "control ok" in rendered.dom  # validation verdicts on the page


def test_two_shape_report_renders(tmp_path: Path) -> None:
    run = two_shape_run(tmp_path / "run")
    assert cli_main(["report", str(run), "--no-png"]) == 0
    expected = load_report_data(run).plots()
    assert {"shapes", "parallel"} <= set(expected)
    check_every_plot_rendered(render(run / "report" / "report.html", tmp_path / "two_shapes.png"), expected)


def test_the_readme_picture_is_the_current_quickstart_report(tmp_path: Path) -> None:
    """docs/img/quickstart-front.png is the first screen of the quickstart's report as it is today: its record
    belongs to that very image (hash), shows what today's report of a fresh quickstart run shows (summary and
    first trade-off plot, as data), and a fresh screenshot of that report, made here as the picture was made
    (`python -m tests.report.readme_screenshot`), has its size and, block by block, its layout."""
    import hashlib
    import json

    from . import readme_screenshot as shot

    record = json.loads(shot.RECORD.read_text())
    assert record["png_sha256"] == hashlib.sha256(shot.PICTURE.read_bytes()).hexdigest(), (
        "the picture changed without its record: python -m tests.report.readme_screenshot")
    browser = chromium()
    run = shot.quickstart_report(tmp_path)
    assert record["shown"] == shot.shown(run), (
        "the report shows other things than the README's picture: python -m tests.report.readme_screenshot")
    fresh = shot.screenshot(run / "report" / "report.html", tmp_path / "fresh.png", browser)
    from PIL import Image

    assert Image.open(fresh).size == Image.open(shot.PICTURE).size == tuple(record["window"])
    assert shot.distance(fresh, shot.PICTURE) < 0.03
