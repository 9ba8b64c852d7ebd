"""A real CPU static campaign (CompileIQ ACFs, ptxas 13.3 builds for sm_90) adds no-ACF twins exactly once,
and front, validate (timings synthetic: no GPU here), the pin snippet and the report show the ACF share."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from paretotune.front import build_front, render_json, render_text
from paretotune.commands.validate import render
from paretotune.validate.worker import CONTROL_ID
from paretotune.validate.validation import validate_run
from paretotune.pareto.attribution import config_key
from paretotune.report import load_report_data
from paretotune.report.html import render_html
from paretotune.search.twins import missing_twins
from paretotune.store import RunDir

REPO = Path(__file__).resolve().parents[2]


def test_the_search_added_each_twin_once_with_meaningful_static_values(twin_run: Path) -> None:
    run = RunDir(twin_run)
    records = run.records()
    twins = [r for r in records if "twin_of" in r.extra]
    assert twins, "front 0 of the quickstart holds ACF candidates"
    by_id = {r.candidate_id: r for r in records}
    no_acf = [config_key(r.config) for r in records if r.acf is None]
    assert len(no_acf) == len(set(no_acf)), "a config measured twice without an ACF"
    for twin in twins:
        partner = by_id[twin.extra["twin_of"]]
        assert twin.status == "ok" and twin.acf is None and partner.acf and twin.config == partner.config
        assert twin.values["registers"] > 0 and twin.values["theoretical_occupancy"] > 0  # a real ptxas build
        assert twin.candidate_id > max(r.candidate_id for r in records if "twin_of" not in r.extra)
    assert missing_twins(run.results(), run.directions()) == []


def test_a_resume_of_the_finished_run_adds_nothing(twin_run: Path, tmp_path: Path) -> None:
    import shutil

    copy = Path(shutil.copytree(twin_run, tmp_path / "run"))
    before = (copy / "results.jsonl").read_text()
    proc = subprocess.run([sys.executable, "-m", "paretotune.cli", "resume", str(copy), "--quiet"], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "complete" in proc.stdout
    assert (copy / "results.jsonl").read_text() == before


def test_front_shows_the_acf_share(twin_run: Path) -> None:
    report = build_front(twin_run)
    text = render_text(report)
    assert "acf_share" in text
    doc = json.loads(render_json(report))
    results = RunDir(twin_run).results().set_index("candidate_id")
    twins = {config_key(r["config"]): i for i, r in results.iterrows() if not r["acf"]}
    for row in doc["front"]:
        if not row["acf"]:
            assert row["acf_share"] is None  # no ACF: no share, not 1.000x
            continue
        twin = results.loc[twins[config_key(row["config"])]]
        assert row["acf_share"]["registers"] == pytest.approx(twin["registers"] / results.loc[row["candidate_id"],
                                                                                               "registers"])
        line = next(line for line in text.splitlines() if re.match(rf"\d+\s+{row['candidate_id']}\s", line))
        assert re.search(r"\d\.\d{3}x registers", line), line


def synthetic(control_ms: float) -> Any:
    """Timings as a GPU would give them, from what each arm is: ACF arms 2 % faster than their config alone."""
    def measure(run: RunDir, arms: list[dict[str, Any]], rounds: int, warmup_ms: float, rep_ms: float) -> dict:
        import numpy as np

        rng = np.random.default_rng(0)
        samples = {"baseline": list(rng.normal(0.300, 0.0006, rounds)),
                   str(CONTROL_ID): list(rng.normal(control_ms, 0.0006, rounds))}
        for arm in arms:
            mean = 0.245 if arm["acf_path"] else 0.250
            samples[str(arm["candidate_id"])] = list(rng.normal(mean, 0.0006, rounds))
        copy_ms = 0.2  # a device copy of the kernel's 64 MiB: 0.2 ms (336 GB/s)
        ceiling = {"bytes": 64 * 2**20, "copy_ms": copy_ms, "copy_gbps": 64 * 2**20 / (copy_ms * 1e-3) / 1e9}
        return {"wide": {"samples": samples, "errors": {}, "ceiling": ceiling, "timing": "cupti",
                         "timing_source": "a stand-in", "gpu_work": ["_wide_kernel", "CatArrayBatchedCopy"]}}
    return measure


def test_validate_attributes_and_pins_the_share(twin_run: Path, tmp_path: Path) -> None:
    import shutil

    copy = Path(shutil.copytree(twin_run, tmp_path / "run"))
    # the ACF candidates the twins were added for (front 0 may hold only a twin that beat them all)
    partners = sorted({r.extra["twin_of"] for r in RunDir(copy).records() if "twin_of" in r.extra})[:3]
    result = validate_run(copy, candidates=partners, top=3, rounds=30, rep_ms=50, warmup_ms=10, alpha=0.01,
                          min_effect=0.5, measure=synthetic(0.300))
    assert not result.unreliable
    table = pd.read_csv(copy / "validation.csv")
    cands = table[(table["role"] == "candidate") & table["twin_id"].notna()]
    assert len(cands) and (cands["acf_speedup"].round(2) == 1.02).all()
    assert (cands["speedup"] - cands["config_speedup"] * cands["acf_speedup"]).abs().max() < 1e-9
    saved = json.loads((copy / "validation.json").read_text())
    assert saved["controls"]["wide"]["reliable"] and saved["best_no_acf"]["wide"]["candidate_id"] >= 0
    text = render(result.verdicts, result.controls, result.best_no_acf, result.ceilings, result.how_timed)
    # how the shape was timed is kept beside the ceiling, not in it, and a call that runs more than its kernel says so
    assert saved["how_timed"]["wide"] == {"timing": "cupti", "timing_source": "a stand-in",
                                          "gpu_work": ["_wide_kernel", "CatArrayBatchedCopy"]}
    assert "gpu_work" not in saved["ceilings"]["wide"]
    assert "each timed call runs 2 GPU activities, all of them timed: _wide_kernel, CatArrayBatchedCopy" in text
    assert "noise floor" in text and "ACF-only 1.02" in text and "config-only 1.2" in text
    # the copy ceiling: each arm's bandwidth and its fraction of a copy of the same bytes, the baseline's beside
    assert list(cands["of_copy"]) == pytest.approx([0.2 / 0.245] * len(cands), rel=0.01)
    assert list(cands["gbps"]) == pytest.approx([64 * 2**20 / 0.245e-3 / 1e9] * len(cands), rel=0.01)
    assert saved["ceilings"]["wide"]["baseline_of_copy"] == pytest.approx(0.2 / 0.300, rel=0.01)
    assert re.search(r"memory: 64\.0 MiB of tensors; a device copy of them 200\.00 us \(0\.34 TB/s\); baseline "
                     r"0\.22 TB/s, 67 % of the copy; nearest candidate \d+ at 8\d %", text), text
    pins = sorted((copy / "artifacts").glob("*_pin.py"))
    assert pins and all("over the same config without it" in p.read_text() or "ACF: none" in p.read_text()
                        for p in pins)
    assert re.search(r"# ACF: \+2\.\d % over the same config without it", pins[0].read_text())
    page = render_html(load_report_data(copy))
    assert "Attribution" in page and "config-only" in page and "<th>of copy</th>" in page
    front = load_report_data(copy).front
    with_acf = front[front["acf"].astype(bool)]
    assert with_acf["acf share"].str.fullmatch(r"\d\.\d{3}x \w+").all(), with_acf["acf share"]
    assert (front.loc[~front["acf"].astype(bool), "acf share"] == "no ACF").all()


def test_an_unreliable_control_writes_no_artifacts(twin_run: Path, tmp_path: Path) -> None:
    import shutil

    copy = Path(shutil.copytree(twin_run, tmp_path / "run"))
    result = validate_run(copy, candidates=None, top=3, rounds=30, rep_ms=50, warmup_ms=10, alpha=0.01,
                          min_effect=0.5, measure=synthetic(0.306))  # the control 2 % slower
    assert set(result.unreliable) == {"wide"} and "slower" in result.unreliable["wide"]
    assert result.artifacts == [] and not (copy / "artifacts").exists()
    table = pd.read_csv(copy / "validation.csv")
    assert not table.loc[table["role"] != "control", "significant"].any()
    assert "control" in render_html(load_report_data(copy)).lower()
