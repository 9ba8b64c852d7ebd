"""Issue 18 on a real GPU: the docs' own kernels measured with runtime (vector add: inputs(shape) seeded on
the GPU, Triton-style grid; the @triton.autotune RMS norm: configs, pruning and reference), read through the
public API (speedups > 0, the convention in the JSON) and validated in a fresh process."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import paretotune
from paretotune.cli import main as cli

pytestmark = pytest.mark.gpu
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def _with_runtime(name: str, tmp_path: Path) -> Path:
    text = (EXAMPLES / name).read_text()
    text = text.replace("objectives: [", "objectives: [runtime, ").replace("source: ", f"source: {EXAMPLES}/")
    text = text.replace("pool_size: 8}", "pool_size: 16}").replace("pool_size: 10}", "pool_size: 16}")
    text += "evaluation: {workers: 2, warmup_ms: 2, rep_ms: 10}\n"
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["vector_add.yaml", "autotuned.yaml"])
def test_own_kernel_runtime_campaign_and_validate(tmp_path: Path, name: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    run = paretotune.run(_with_runtime(name, tmp_path), out=tmp_path / "run")
    results = run.results
    ok = results[results["status"] == "ok"]
    assert bool(ok["is_baseline"].any()) and len(ok) >= 4, results[["status", "error"]].to_string()
    assert not results["error"].fillna("").str.contains("wrong answer|mismatch", case=False).any()
    front = run.front()
    assert (front["gain:runtime"] > 0).all()
    capsys.readouterr()  # paretotune.run prints the run as the CLI does: only validate's JSON is read below
    assert cli(["validate", str(tmp_path / "run"), "--top", "2", "--rounds", "10", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "> 1 is faster" in doc["convention"] and doc["verdicts"]
    verdicts = pd.read_csv(tmp_path / "run" / "validation.csv")
    assert verdicts["speedup"].notna().any()


def test_kernel_object_from_the_api_runs_on_the_gpu(tmp_path: Path) -> None:
    """A TritonKernel object (not an import string) measured with runtime: GPU workers load it by value."""
    import sys

    sys.path.insert(0, str(EXAMPLES))
    try:
        from vector_add import vector_add
    finally:
        sys.path.remove(str(EXAMPLES))
    run = paretotune.run({"name": "api-gpu", "kernel": {"source": vector_add}, "shapes": [{"n": 1 << 22}],
                          "objectives": ["runtime"], "acf": {"search_space": "none"},
                          "search": {"engine": "grid", "generations": 1, "pool_size": 9},
                          "evaluation": {"workers": 2, "warmup_ms": 2, "rep_ms": 10}}, out=tmp_path / "run")
    assert (run.results["status"] == "ok").sum() >= 9
