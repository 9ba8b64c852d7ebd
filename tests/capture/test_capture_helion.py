"""``paretotune capture`` of a program with two Helion kernels (one returns its output, one writes into its
argument), run under ``TRITON_INTERPRET=1`` on the CPU; the in-place kernel's campaign run as a static one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).resolve().parent / "programs" / "helion_app" / "program.py"


def _cli(*args: str, cwd: Path, interpret: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return subprocess.run([sys.executable, "-m", "paretotune.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_helion_kernels_become_campaigns_with_the_programs_configs(tmp_path: Path) -> None:
    import pandas as pd

    done = _cli("capture", "--out", "cap", "--generations", "1", "--no-check", "--", "python", str(PROGRAM),
                cwd=tmp_path, interpret=True)  # the Triton test covers the check; `run` below resolves it anyway
    assert done.returncode == 0, done.stderr
    out = tmp_path / "cap"
    kernels = {k["name"]: k for k in json.loads((out / "capture.json").read_text())["kernels"]}
    add_rows, scale = kernels["add_rows"], kernels["scale_"]
    # two signatures, most time first: on the CPU each one's time is mostly its own compile, so which is first varies
    assert sorted(s["calls"] for s in add_rows["signatures"]) == [1, 2] and add_rows["problem"] is None
    times = [s["time_ms"] for s in add_rows["signatures"]]
    assert times == sorted(times, reverse=True)
    first = next(s for s in add_rows["signatures"] if s["calls"] == 2)
    assert first["config"] == {"block_sizes": [32, 32], "num_warps": 4}  # the decorator's config
    assert first["returned"] == [{"shape": [64, 96], "dtype": "float32", "stride": [96, 1], "argument": None}]
    assert [leaf["tensor"]["written"] for leaf in first["args"]] == [False, False]
    only = scale["signatures"][0]
    assert only["args"][0]["tensor"]["written"] and only["args"][1] == {"value": 3.0} and only["returned"] == []
    # an AOT kernel with a user key: Helion asks its heuristic with the key's flattened values (width, bytes)
    assert kernels["keyed_scale"]["signatures"][0]["user_key"] == [48, 4]
    rows = {r["kernel"]: r for r in json.loads((out / "summary.json").read_text())["kernels"]}
    assert rows["add_rows"]["writes"] == "returns" and rows["scale_"]["writes"] == "x"
    campaign = yaml.safe_load((out / "scale_.yaml").read_text())
    assert campaign["kernel"]["heuristic"] == "calls/scale_.heuristic.py"  # the program's config per shape

    run = tmp_path / "run"
    done = _cli("run", str(out / "scale_.yaml"), "--out", str(run), "--quiet", cwd=tmp_path, interpret=False)
    assert done.returncode == 0, done.stderr
    results = pd.read_json(run / "results.jsonl", lines=True)
    assert (results["status"] == "ok").all() and len(results) > 1
    baseline = json.loads(results.loc[results["is_baseline"], "config"].iloc[0])
    assert baseline["block_sizes"] == [128] and baseline["num_warps"] == 2


def test_the_generated_heuristic_answers_each_signatures_config(tmp_path: Path) -> None:
    """recorded_config maps rebuilt arguments back to their signature's config (and refuses others)."""
    import torch

    from paretotune.capturing.replay import rebuild_args, recorded_config

    kernel = "add_rows"
    calls = tmp_path / f"{kernel}.json"
    signatures = [
        {"id": "a", "args": [{"tensor": {"shape": [64, 96], "stride": [96, 1], "dtype": "float32", "device": "cpu",
                                         "offset": 0, "storage": 0}}, {"value": 2.0}], "config": {"num_warps": 4}},
        {"id": "b", "args": [{"tensor": {"shape": [32, 64], "stride": [64, 1], "dtype": "float32", "device": "cpu",
                                         "offset": 0, "storage": 0}}, {"value": 2.0}], "config": {"num_warps": 8}},
    ]
    calls.write_text(json.dumps({"format": "paretotune-capture/1", "kernel": {"name": kernel, "kind": "helion"},
                                 "signatures": signatures}))
    heuristic = str(tmp_path / f"{kernel}.heuristic.py")
    for sig in signatures:
        args = rebuild_args(sig["args"], "meta", 0, None)
        assert recorded_config(heuristic, args) == sig["config"]
    with pytest.raises(ValueError, match="no captured signature"):
        recorded_config(heuristic, (torch.empty(8, 8, device="meta"), 2.0))


def test_the_generated_heuristic_answers_a_user_keyed_kernel_by_its_flattened_key(tmp_path: Path) -> None:
    """Helion calls the heuristic of an ``aot_kernel(key=...)`` with the key's flattened values, not the arguments
    (pretuned RoPE on the H200, 2026-12-02: its captured campaign failed with "no captured signature")."""
    from paretotune.capturing.replay import recorded_config

    kernel = "rope_like"
    tensor = {"tensor": {"shape": [1, 32, 64, 128], "stride": [262144, 8192, 128, 1], "dtype": "bfloat16",
                         "device": "cpu", "offset": 0, "storage": 0}}
    signatures = [{"id": "a", "args": [tensor], "config": {"num_warps": 16}, "user_key": [4096, 64]},
                  {"id": "b", "args": [tensor], "config": {"num_warps": 4}, "user_key": [2048, 64]}]
    (tmp_path / f"{kernel}.json").write_text(json.dumps({"format": "paretotune-capture/1", "kernel": {
        "name": kernel, "kind": "helion"}, "signatures": signatures}))
    heuristic = str(tmp_path / f"{kernel}.heuristic.py")
    assert recorded_config(heuristic, (4096, 64)) == {"num_warps": 16}
    assert recorded_config(heuristic, (2048, 64)) == {"num_warps": 4}
    with pytest.raises(ValueError, match="no captured signature"):
        recorded_config(heuristic, (1024, 64))
