"""One reading of every number, on a real campaign: the same candidate's same objective reads the same gain over
the baseline in the front table, its JSON, the all-shapes table, the report (front table, per-shape chart,
HTML), export, the service and the API; the rule is stated once in each output's header.

The campaign is the CPU quickstart's softmax on two shapes (real Triton AOT compiles, real ptxas 13.3 builds of
CompileIQ-sampled ACFs), registers first so that the all-shapes table ranks by registers: a minimized objective
that is not a time, the one that used to read value / baseline in the front and baseline / value elsewhere.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
RULE = "> 1 is better: baseline / value where lower is better"


def _cli(*args: str) -> str:
    env = dict(os.environ)
    env.setdefault("CIQ_SEARCH_SPACES_DIR", str(REPO.parent / "shared" / "compileiq"))
    done = subprocess.run([sys.executable, "-m", "paretotune.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def two_shape_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("one_reading")
    config = yaml.safe_load((REPO / "configs" / "quickstart.yaml").read_text())
    config["shapes"] = [{"name": "wide", "M": 4096, "N": 16384, "dtype": "float16"},
                        {"name": "half", "M": 4096, "N": 8192, "dtype": "float16"}]
    config["objectives"] = ["registers", "theoretical_occupancy"]
    config["search"].update(generations=1, pool_size=12)
    campaign = folder / "two_shapes.yaml"
    campaign.write_text(yaml.safe_dump(config, sort_keys=False))
    _cli("run", str(campaign), "--out", str(folder / "run"), "--quiet")
    return folder / "run"


def test_the_same_candidate_reads_the_same_gain_in_every_view(two_shape_run: Path) -> None:
    import paretotune
    from paretotune.report import load_report_data, render_html
    from paretotune.service.progress import RunView

    run = two_shape_run
    doc = json.loads(_cli("front", str(run), "--json"))
    assert doc["all_shapes"], "num_warps alone cuts the softmax's registers on both shapes: someone must qualify"
    pick = doc["all_shapes"][0]
    cid = pick["candidate_id"]
    base = doc["baseline"]["values"]
    front_ids = [r["candidate_id"] for r in doc["front"]]
    assert cid in front_ids, "the all-shapes pick lowers registers on both shapes: it is on front 0"
    cells = doc["front"][front_ids.index(cid)]["values"]
    results = pd.read_json(run / "results.jsonl", lines=True).set_index("candidate_id")

    for shape in ("wide", "half"):
        col = f"registers@{shape}"
        want = base[col] / float(results.loc[cid, col])  # fewer registers: > 1
        assert want > 1
        # the front's JSON and the all-shapes table (JSON)
        assert cells[col]["gain"] == pytest.approx(want) and pick["speedups"][shape] == pytest.approx(want)

        # the front table as printed, and the all-shapes table as printed
        text = _cli("front", str(run))
        assert f"{float(results.loc[cid, col]):.4g} ({want:.3f}x)" in text
        shapes_row = next(line for line in text.split("every shape")[1].splitlines()
                          if re.match(rf"\s*1\s+{cid}\s", line))
        assert f"{want:.3f}x" in shapes_row

        # the report: its front table, its all-shapes table and its per-shape chart (the PNG's data too)
        data = load_report_data(run)
        assert float(data.front.set_index("candidate_id").loc[cid, f"{col} gain"]) == pytest.approx(want)
        assert data.all_shapes is not None
        assert float(data.all_shapes.set_index("candidate_id").loc[cid, f"speedup@{shape}"]) == pytest.approx(want)
        assert data.shapes is not None
        bars = data.shapes.bars
        bar = bars[(bars["candidate_id"] == cid) & (bars["objective"] == "registers") & (bars["shape"] == shape)]
        assert float(bar["improvement"].iloc[0]) == pytest.approx(want)

        # export (CSV), the service and the API
        exported = pd.read_csv(pd.io.common.StringIO(_cli("export", str(run), "--out", "-"))).set_index("candidate_id")
        assert float(exported.loc[cid, f"gain:{col}"]) == pytest.approx(want)
        served = RunView().front(run)
        assert served is not None
        assert next(r for r in served["front"]
                    if r["candidate_id"] == cid)["values"][col]["gain"] == pytest.approx(want)
        api = paretotune.open_run(run).front().set_index("candidate_id")
        assert float(api.loc[cid, f"gain:{col}"]) == pytest.approx(want)

    # occupancy, maximized, reads value / baseline, also > 1 when better
    occ = "theoretical_occupancy@wide"
    assert cells[occ]["gain"] == pytest.approx(float(results.loc[cid, occ]) / base[occ])

    # the rule, stated once in each output's header
    assert RULE in _cli("front", str(run)) and RULE in doc["convention"]
    assert RULE in render_html(load_report_data(run)).replace("&gt;", ">")
