"""The server end to end on loopback, with real campaigns (real ptxas, CompileIQ, Triton compiles).

Submit the CPU quickstart (small budget), poll it to completion, fetch its front and an ACF; cancel a running
and a queued campaign; SIGKILL the server mid-campaign and restart it on the same work directory: the campaign
resumes and finishes with every evaluation stored before the kill kept and none evaluated twice.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.browsers import chromium
from tests.service.conftest import Server, group_alive, small_campaign

FINAL = {"done", "failed", "cancelled"}



def _rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def module_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(tmp_path_factory.mktemp("svc") / "work")
    yield server
    server.stop()


def test_submit_poll_front_artifact_cancel(module_server: Server) -> None:
    server = module_server
    first = server.submit(small_campaign(name="first"))
    second = server.submit(small_campaign(generations=3, name="second"))
    third = server.submit(small_campaign(name="third"))
    listed = server.client.get("/campaigns").json()["campaigns"]
    assert [c["id"] for c in listed] == [first, second, third]

    st = server.wait(first, lambda s: s["status"] in FINAL)
    assert st["status"] == "done", st
    run_dir = server.workdir / "campaigns" / first / "run"
    twins = sum("twin_of" in json.loads(line)["extra"] for line in (run_dir / "results.jsonl").read_text().splitlines())
    # the budget, then the no-ACF twins of front 0's ACF configs (for attribution), counted apart
    assert st["progress"]["evaluated"] == st["progress"]["budget"] == 11 and st["progress"]["twins"] == twins
    assert set(st["progress"]["best"]) == {"spill_bytes", "registers", "theoretical_occupancy"}

    front = server.client.get(f"/campaigns/{first}/front").json()
    assert front["n_evaluated"] == 11 + twins and front["front"], front
    assert "run_dir" not in front  # no server paths in answers
    # an ACF the run evaluated (front 0 may now hold only a no-ACF twin: one that beats every ACF of its config)
    acf = next(json.loads(line)["acf"] for line in (run_dir / "results.jsonl").read_text().splitlines()
               if json.loads(line)["acf"])
    r = server.client.get(f"/campaigns/{first}/artifacts/{acf}.acf")
    stored = server.workdir / "campaigns" / first / "run" / "acf" / f"{acf}.acf"
    assert r.status_code == 200 and r.content == stored.read_bytes() and len(r.content) > 100
    assert f"{acf}.acf" in server.client.get(f"/campaigns/{first}/artifacts").json()["artifacts"]
    report = server.client.get(f"/campaigns/{first}/report")
    assert report.status_code == 200 and "<html" in report.text.lower() and "plotly" in report.text.lower()

    # the second one runs now (one static slot) and the third waits: drop the third, then stop the second
    st = server.wait(second, lambda s: s["status"] == "running" and s["progress"]["evaluated"] >= 1)
    assert server.status(third)["status"] == "queued"
    assert server.client.post(f"/campaigns/{third}/cancel", json={}).json()["status"] == "cancelled"
    pgid = json.loads((server.workdir / "campaigns" / second / "state.json").read_text())["pid"]
    r = server.client.post(f"/campaigns/{second}/cancel", json={})
    assert r.status_code == 200 and r.json()["status"] == "cancelled", r.text
    assert not group_alive(pgid), "cancel left campaign processes behind"
    evaluated = server.status(second)["progress"]["evaluated"]
    assert evaluated < 31
    time.sleep(1.0)  # the scheduler would have started the third by now, had the cancel not held
    assert server.status(third)["status"] == "cancelled" and server.status(third)["attempts"] == 0
    assert server.status(second)["progress"]["evaluated"] == evaluated
    assert server.client.post(f"/campaigns/{first}/cancel", json={}).json()["status"] == "done"  # finished: unchanged
    assert not (server.workdir / "campaigns" / third / "run").exists()


def test_sigkill_server_mid_campaign_then_restart_resumes(start_server: Callable[..., Server], tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    server = start_server(workdir=workdir)
    cid = server.submit(small_campaign(generations=2))
    budget = 21
    server.wait(cid, lambda s: 3 <= s["progress"]["evaluated"])
    pgid = json.loads((workdir / "campaigns" / cid / "state.json").read_text())["pid"]
    server.kill()
    deadline = time.monotonic() + 20  # the campaign dies with the server (PR_SET_PDEATHSIG), its workers after it
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not group_alive(pgid), "the campaign outlived the killed server"
    run = workdir / "campaigns" / cid / "run"
    before = _rows(run)
    assert 3 <= len(before) < budget, f"the kill came too late to test a resume ({len(before)} stored)"
    assert json.loads((workdir / "campaigns" / cid / "state.json").read_text())["status"] == "running"

    server = start_server(workdir=workdir)
    st = server.wait(cid, lambda s: s["status"] in FINAL)
    assert st["status"] == "done", st
    assert st["attempts"] == 2
    after = _rows(run)
    ids = [r["candidate_id"] for r in after]
    twins = sum("twin_of" in str(r.get("extra", "")) for r in after)  # after the search, for attribution
    assert len(ids) == len(set(ids)) == budget + twins, "an evaluation was lost or repeated"
    assert after[:len(before)] == before, "records stored before the kill changed"
    assert st["progress"]["evaluated"] == budget


def test_dashboard_draws_the_plot_in_headless_chromium(module_server: Server, tmp_path: Path) -> None:
    """Runs after the test above (same server): the finished quickstart's points appear in the page's SVG."""
    browser = chromium()
    done = [c for c in module_server.client.get("/campaigns").json()["campaigns"] if c["status"] == "done"]
    assert done, "needs the finished campaign of test_submit_poll_front_artifact_cancel"
    env = dict(os.environ, HOME=str(tmp_path))
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=8000",
                          "--dump-dom", f"{module_server.url}/#campaign={done[0]['id']}"], capture_output=True,
                         text=True, timeout=90, env=env, check=False).stdout
    assert 'id="pareto-plot"' in dom, dom[:2000]
    svg = dom[dom.index('id="pareto-plot"'):]
    svg = svg[:svg.index("</svg>")]
    twins = module_server.client.get(f"/campaigns/{done[0]['id']}").json()["progress"]["twins"]
    points = 11 + twins  # every record is plotted, the no-ACF twins too
    assert f'data-points="{points}"' in svg, svg[:1000]
    assert svg.count("<circle") == points and 'class="pt front' in svg
    assert done[0]["id"] in dom and "11/11" in dom
