"""On a GPU: captured calls are timed by CUDA events around each launch (Triton's launch hooks), so a first
call's compile is not GPU time, and the campaign's objective is runtime; the campaign runs as written."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from paretotune.capturing import TIME_FIRST

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
LIB = Path(__file__).resolve().parent / "programs" / "lib"
LOOP = ROOT / "benchmarks" / "programs" / "launch_loop.py"


def test_gpu_capture_times_launches_and_its_campaign_runs(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(LIB), os.environ.get("PYTHONPATH", "")])}
    env.pop("TRITON_INTERPRET", None)
    cache = tmp_path / "triton-cache"  # a cold cache: every kernel compiles inside its first call
    done = subprocess.run([sys.executable, "-m", "paretotune.cli", "capture", "--out", "cap", "--generations", "1",
                           "--wall-clock-s", "60", "--", "python", str(LOOP), "--iters", "100", "--warmup", "0"],
                          cwd=tmp_path, env={**env, "TRITON_CACHE_DIR": str(cache)}, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "cap" / "capture.json").read_text())
    assert doc["timing"] == "cuda_events"  # relu_ gets its tensor by keyword: events too, not wall time
    kernels = {k["name"]: k for k in doc["kernels"]}
    assert set(kernels) == {"scale_add", "row_rms_norm", "relu_"}
    for kernel in kernels.values():
        assert kernel["calls"] == 100 and kernel["untimed_calls"] == 0
        # sampled: the first 16, then about 1 in 8 of the other 84 (a seeded draw)
        assert TIME_FIRST <= kernel["timed_calls"] == kernel["sampled_calls"] < 60, kernel
        # 100 launches of kernels of a few microseconds: a compile (>= 50 ms) counted would dwarf this
        assert 0 < kernel["time_ms"] < 20, kernel
    sampled = sum(k["sampled_calls"] for k in kernels.values())
    assert f"sampled {sampled} of 300 calls" in done.stdout
    every = subprocess.run([sys.executable, "-m", "paretotune.cli", "capture", "--out", "cap_all", "--timing", "all",
                            "--no-check", "--", "python", str(LOOP), "--iters", "100", "--warmup", "0"],
                           cwd=tmp_path, env={**env, "TRITON_CACHE_DIR": str(cache)}, capture_output=True, text=True,
                           timeout=600)
    assert every.returncode == 0, every.stderr
    for kernel in json.loads((tmp_path / "cap_all" / "capture.json").read_text())["kernels"]:
        assert kernel["timed_calls"] == kernel["calls"] == 100
        sampled = kernels[kernel["name"]]["time_ms"]  # the scaled estimate agrees with timing every call
        assert 0.5 < sampled / kernel["time_ms"] < 2, (kernel["name"], sampled, kernel["time_ms"])
    campaign = yaml.safe_load((tmp_path / "cap" / "scale_add.yaml").read_text())
    assert campaign["objectives"] == ["runtime"]
    run = subprocess.run([sys.executable, "-m", "paretotune.cli", "run", str(tmp_path / "cap" / "scale_add.yaml"),
                          "--out", str(tmp_path / "run"), "--quiet"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    baseline = next(r for r in rows if r["is_baseline"])
    assert baseline["status"] == "ok" and json.loads(baseline["config"]) == {"BLOCK": 256, "num_warps": 2}
