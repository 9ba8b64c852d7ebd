"""``paretotune capture`` of a real program with seven Triton kernels, run under ``TRITON_INTERPRET=1`` on the
CPU, then ``paretotune run`` on the campaigns it wrote (static: sm_90 builds, ptxas registers and occupancy).

The program (``programs/app/program.py``) imports a library (``programs/lib/capkernels``, on PYTHONPATH) with a
plain ``@triton.jit`` kernel, an ``@triton.autotune`` one, an in-place ``@triton.heuristics`` one, a gather
with an index tensor and a kernel made inside a function; it defines two kernels itself, one launched with a
launch option no campaign can set."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"
PROGRAM = PROGRAMS / "app" / "program.py"


def _env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join([str(ROOT), str(PROGRAMS / "lib"), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, **extra}
    env.pop("TRITON_INTERPRET", None)
    env.update(extra)
    return env


def _cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "paretotune.cli", *args], cwd=cwd, env=_env(**env),
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("capture")
    done = _cli("capture", "--out", "cap", "--values=gather_rows", "--generations", "1", "--", "python", str(PROGRAM),
                "3", cwd=work, TRITON_INTERPRET="1")
    plain = subprocess.run([sys.executable, str(PROGRAM), "3"], cwd=work, env=_env(TRITON_INTERPRET="1"),
                           capture_output=True, text=True, timeout=300)
    out = work / "cap"
    doc = json.loads((out / "capture.json").read_text()) if (out / "capture.json").is_file() else {}
    return {"done": done, "plain": plain, "out": out, "work": work,
            "kernels": {k["name"]: k for k in doc.get("kernels", [])},
            "summary": json.loads((out / "summary.json").read_text()) if (out / "summary.json").is_file() else {}}


def test_the_program_runs_unchanged_and_its_exit_code_is_the_commands(captured: dict[str, Any]) -> None:
    done, plain = captured["done"], captured["plain"]
    assert done.returncode == 3, done.stderr  # the program's sys.exit(3)
    checksums = [line for line in done.stdout.splitlines() if line.startswith("checksums")]
    assert checksums == [line for line in plain.stdout.splitlines() if line.startswith("checksums")]
    assert plain.returncode == 3


def test_kernels_are_ranked_by_time_with_calls_and_signatures(captured: dict[str, Any]) -> None:
    rows = captured["summary"]["kernels"]
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert [r["time_ms"] for r in rows] == sorted((r["time_ms"] for r in rows), reverse=True)
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    by_name = {r["kernel"]: r for r in rows}
    assert set(by_name) == {"scale_add", "row_rms_norm", "relu_", "gather_rows", "double", "square", "negate"}
    assert (by_name["scale_add"]["calls"], by_name["scale_add"]["signatures"]) == (7, 2)
    scale_add = captured["kernels"]["scale_add"]
    assert [s["calls"] for s in scale_add["signatures"]] == [6, 1]  # most expensive first
    text = (captured["out"] / "summary.txt").read_text()
    assert text.splitlines()[1].split()[:3] == ["rank", "kernel", "kind"] and text in captured["done"].stdout


def test_kernels_it_cannot_describe_are_listed_with_the_reason(captured: dict[str, Any]) -> None:
    by_name = {r["kernel"]: r for r in captured["summary"]["kernels"]}
    assert by_name["double"]["campaign"] is None
    assert "defined inside local_kernel_op() as local_kernel_op.<locals>.double" in by_name["double"]["skipped"]
    assert by_name["double"]["calls"] == 2  # two kernel objects made by two calls of the function: one row
    assert by_name["negate"]["campaign"] is None and "enable_fp_fusion=False" in by_name["negate"]["skipped"]
    made = {r["kernel"] for r in captured["summary"]["kernels"] if r["campaign"]}
    assert made == {"scale_add", "row_rms_norm", "relu_", "gather_rows", "square"}
    assert sorted(p.name for p in captured["out"].glob("*.yaml")) == sorted(f"{k}.yaml" for k in made)


def test_written_and_read_only_arguments_are_told_apart(captured: dict[str, Any]) -> None:
    kernels = captured["kernels"]

    def written(name: str) -> dict[str, bool]:
        args = kernels[name]["signatures"][0]["args"]
        return {n: leaf["tensor"]["written"] for n, leaf in args.items() if "tensor" in leaf}

    assert written("scale_add") == {"x_ptr": False, "y_ptr": False, "out_ptr": True}
    assert written("relu_") == {"x_ptr": True}  # in place
    assert written("gather_rows") == {"table_ptr": False, "idx_ptr": False, "out_ptr": True}
    by_name = {r["kernel"]: r for r in captured["summary"]["kernels"]}
    assert by_name["relu_"]["writes"] == "x_ptr" and by_name["scale_add"]["writes"] == "out_ptr"


def test_the_baseline_is_what_the_program_launched(captured: dict[str, Any]) -> None:
    kernels = captured["kernels"]
    first = kernels["scale_add"]["signatures"][0]
    assert first["config"] == {"BLOCK": 256, "num_warps": 2}  # the constexpr and the launch option it passed
    assert first["launches"] == [{"config": {"BLOCK": 256, "num_warps": 2}, "grid": [16]}]
    assert first["args"]["alpha"] == {"value": 0.5} and first["args"]["n"] == {"value": 4096}
    picks = {s["args"]["n_cols"]["value"]: s["config"] for s in kernels["row_rms_norm"]["signatures"]}
    assert picks == {100: {"BLOCK": 128, "num_warps": 2, "num_stages": 1},  # the autotuner's pick per key
                     200: {"BLOCK": 256, "num_warps": 2, "num_stages": 1}}
    relu = kernels["relu_"]["signatures"][0]
    assert relu["config"] == {} and relu["launches"][0]["config"] == {"BLOCK": 512}  # BLOCK is the heuristic's


def test_campaign_sources_name_kernel_files(captured: dict[str, Any]) -> None:
    """By file and name, a library's kernel (on PYTHONPATH) as the program's own; a file that shares no folder
    with the capture's but the root by its absolute path."""
    out = captured["out"]
    scale_add = yaml.safe_load((out / "scale_add.yaml").read_text())
    where, _, name = scale_add["kernel"]["source"].rpartition(":")
    library = PROGRAMS / "lib" / "capkernels" / "ops.py"
    assert (out / where).resolve() == library and name == "scale_add"
    assert Path(where).is_absolute() == (os.path.commonpath([library, out.resolve()]) == os.sep)
    assert scale_add["kernel"]["captured"] == "calls/scale_add.json"
    assert [s["captured"] for s in scale_add["shapes"]] == [s["id"] for s in
                                                            captured["kernels"]["scale_add"]["signatures"]]
    square = yaml.safe_load((out / "square.yaml").read_text())["kernel"]["source"]
    assert (out / square.rpartition(":")[0]).resolve() == PROGRAM and square.endswith(":square")
    assert scale_add["objectives"] == ["registers", "theoretical_occupancy"]  # no GPU seen: static objectives
    assert scale_add["search"]["strategy"] == "acf-only" and scale_add["search"]["generations"] == 1


def test_inputs_are_rebuilt_from_the_metadata_and_saved_values(captured: dict[str, Any]) -> None:
    """The campaigns' own adapters (resolved as `paretotune run` resolves them) make the recorded tensors; the
    kernel given --values gets the first call's values."""
    import torch

    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter

    sys.path.insert(0, str(PROGRAMS / "lib"))
    try:
        adapter = make_adapter(load_campaign(captured["out"] / "scale_add.yaml"))
        gather = make_adapter(load_campaign(captured["out"] / "gather_rows.yaml"))
    finally:
        sys.path.remove(str(PROGRAMS / "lib"))
    for shape, sig in zip(load_campaign(captured["out"] / "scale_add.yaml").shapes,
                          captured["kernels"]["scale_add"]["signatures"], strict=True):
        made = adapter.make_inputs(shape, "cpu", 0)
        assert list(made) == ["x_ptr", "y_ptr", "out_ptr"]
        for name, tensor in made.items():
            meta = sig["args"][name]["tensor"]
            assert (list(tensor.shape), list(tensor.stride()), str(tensor.dtype)) == (
                meta["shape"], meta["stride"], f"torch.{meta['dtype']}")
        assert adapter.named_args(made, shape, adapter.default_config(shape))["alpha"] == sig["args"]["alpha"]["value"]
    assert adapter.spec.output == "out_ptr"  # the argument the program's call wrote is the checked output
    gather_shape = load_campaign(captured["out"] / "gather_rows.yaml").shapes[0]
    saved = torch.load(captured["out"] / captured["kernels"]["gather_rows"]["signatures"][0]["values"],
                       weights_only=True)
    made = gather.make_inputs(gather_shape, "cpu", 0)
    assert torch.equal(made["table_ptr"], saved[0]) and torch.equal(made["idx_ptr"], saved[1])


@pytest.mark.parametrize("kernel", ["row_rms_norm", "square"])
def test_paretotune_run_completes_the_captured_campaigns(captured: dict[str, Any], kernel: str) -> None:
    """An autotuned kernel named by module (a baseline per shape: the autotuner's picks) and a kernel from the
    program's own file, as static campaigns."""
    import pandas as pd

    run = captured["work"] / f"run-{kernel}"
    done = _cli("run", str(captured["out"] / f"{kernel}.yaml"), "--out", str(run), "--quiet", cwd=captured["work"])
    assert done.returncode == 0, done.stderr
    results = pd.read_json(run / "results.jsonl", lines=True)
    assert (results["status"] == "ok").all() and len(results) > 1
    baseline = json.loads(results.loc[results["is_baseline"], "config"].iloc[0])
    assert baseline == ({} if kernel == "row_rms_norm" else {"BLOCK": 256})  # {}: each shape its own baseline
