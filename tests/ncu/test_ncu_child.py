"""The stock child program on CPU: spec plumbing, warm-up outside ranges, markers and exit codes.

NVTX calls go to tests/ncu/fake_nvtx (put first on the path), which logs them next to the fake launches.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paretotune.ncu.batch import BatchItem, ChildRequest
from paretotune.ncu.child import EXIT_CUDA_POISONED, EXIT_SETUP, import_object, python_child, write_spec
from paretotune.ncu.protocol import parse_markers
from paretotune.ncu.run import child_env

HERE = Path(__file__).resolve().parent
FACTORY = "ncu_fake_kernels:make_launch"


def run_child(tmp_path: Path, items: list[BatchItem], domain: str | None = None) -> tuple[int, list[dict], str]:
    events = tmp_path / "events.jsonl"
    events.write_text("")
    argv = python_child(FACTORY, sys_path=[str(HERE)])(ChildRequest(tuple(items), tmp_path, domain))
    env = child_env({"FAKE_NCU_EVENTS": str(events),
                     "PYTHONPATH": os.pathsep.join([str(HERE / "fake_nvtx"), os.environ.get("PYTHONPATH", "")])})
    proc = subprocess.run(argv, env=env, check=False, capture_output=True, text=True, timeout=60)
    return proc.returncode, [json.loads(ln) for ln in events.read_text().splitlines()], proc.stderr


def item(cid: int, **params: object) -> BatchItem:
    return BatchItem(cid, "s", params)


def test_spec_file(tmp_path: Path) -> None:
    items = [BatchItem(1, "M=64", {"BLOCK": 64}), BatchItem(2, "M=64", {"BLOCK": 128})]
    path = write_spec(tmp_path / "spec.json", items, lambda it: f"mod:make_{it.candidate_id}",
                      nvtx_domain="paretotune", warmup=2, sys_path=["/x"])
    spec = json.loads(path.read_text())
    assert spec["version"] == 1 and spec["nvtx_domain"] == "paretotune" and spec["warmup"] == 2
    assert spec["sys_path"] == ["/x"]
    assert spec["items"][1] == {"range": "pt_2_M-3d64", "candidate_id": 2, "shape": "M=64",
                                "factory": "mod:make_2", "params": {"BLOCK": 128}}
    with pytest.raises(ValueError, match="JSON"):
        write_spec(tmp_path / "bad.json", [BatchItem(1, "s", {"x": object()})], "m:f")


def test_python_child_argv(tmp_path: Path) -> None:
    argv = python_child("m:f", python="/usr/bin/python3")(ChildRequest((item(1),), tmp_path, None))
    assert argv == ["/usr/bin/python3", "-m", "paretotune.ncu.child", str(tmp_path / "child_spec.json")]
    assert (tmp_path / "child_spec.json").is_file()


def test_warm_up_all_outside_ranges_then_one_launch_per_range(tmp_path: Path) -> None:
    rc, events, stderr = run_child(tmp_path, [item(1), item(2), item(3)])
    assert rc == 0
    kinds = [(e["event"], e.get("name")) for e in events]
    assert kinds == [("launch", None)] * 3 + [
        ("push", "pt_1_s"), ("launch", None), ("pop", None),
        ("push", "pt_2_s"), ("launch", None), ("pop", None),
        ("push", "pt_3_s"), ("launch", None), ("pop", None)]
    assert all(e["domain"] is None for e in events if e["event"] == "push")
    markers = [(m.event, m.range_name) for m in parse_markers(stderr)]
    assert markers == [("start", "pt_1_s"), ("start", "pt_2_s"), ("start", "pt_3_s"),
                       ("measure", "pt_1_s"), ("measure", "pt_2_s"), ("measure", "pt_3_s")]


def test_named_domain(tmp_path: Path) -> None:
    rc, events, _ = run_child(tmp_path, [item(1)], domain="paretotune")
    assert rc == 0
    assert [e["domain"] for e in events if e["event"] in ("push", "pop")] == ["paretotune", "paretotune"]


def test_python_errors_are_reported_and_the_rest_goes_on(tmp_path: Path) -> None:
    rc, events, stderr = run_child(tmp_path, [item(1, raise_in="build"), item(2), item(3, raise_in="measure")])
    assert rc == 0
    failed = {m.range_name: m.message for m in parse_markers(stderr) if m.event == "failed"}
    assert set(failed) == {"pt_1_s", "pt_3_s"}
    assert "CompilationError" in failed["pt_1_s"] and "fake error in measure" in failed["pt_3_s"]
    pushes = [e["name"] for e in events if e["event"] == "push"]
    assert pushes == ["pt_2_s", "pt_3_s"]  # the build failure never gets a range
    assert [e["event"] for e in events].count("push") == [e["event"] for e in events].count("pop")


def test_sticky_cuda_error_ends_the_child(tmp_path: Path) -> None:
    rc, events, stderr = run_child(tmp_path, [item(1), item(2, sticky_in="warmup"), item(3)])
    assert rc == EXIT_CUDA_POISONED
    markers = parse_markers(stderr)
    assert [m.range_name for m in markers if m.event == "failed"] == ["pt_2_s"]
    assert "illegal memory access" in markers[-1].message
    assert not any(e["event"] == "push" for e in events)


def test_bad_spec_is_fatal(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"version": 9, "items": []}))
    proc = subprocess.run([sys.executable, "-m", "paretotune.ncu.child", str(spec)], env=child_env(),
                          check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == EXIT_SETUP
    (marker,) = parse_markers(proc.stderr)
    assert marker.event == "fatal" and "spec version 9" in marker.message
    proc = subprocess.run([sys.executable, "-m", "paretotune.ncu.child"], env=child_env(), check=False,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == EXIT_SETUP and "usage" in proc.stderr


def test_unknown_factory_fails_the_item(tmp_path: Path) -> None:
    items = [BatchItem(1, "s")]
    argv = python_child("no_such_module_xyz:make")(ChildRequest(tuple(items), tmp_path, None))
    proc = subprocess.run(argv, env=child_env(), check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    (failed,) = [m for m in parse_markers(proc.stderr) if m.event == "failed"]
    assert "ModuleNotFoundError" in failed.message


def test_import_object() -> None:
    assert import_object("os.path:join") is os.path.join
    assert import_object("paretotune.ncu.child:import_object") is import_object
    with pytest.raises(ValueError, match="module:attr"):
        import_object("os.path.join")


@pytest.mark.slow
@pytest.mark.parametrize("factory", ["ncu_gpu_kernels:make_copy_launch", "ncu_helion_scale:make_scale_launch"])
def test_real_triton_and_helion_kernels_through_the_child_on_cpu(tmp_path: Path, factory: str) -> None:
    """A Triton and a Helion kernel, run by the real child with Triton's interpreter instead of a GPU."""
    pytest.importorskip("triton")
    if "helion" in factory:
        pytest.importorskip("helion")
    items = [BatchItem(i, "4k", {"n": 4096, "block": b, "num_warps": w, "device": "cpu"})
             for i, (b, w) in enumerate([(256, 2), (1024, 4)])]
    argv = python_child(factory, sys_path=[str(HERE)])(
        ChildRequest(tuple(items), tmp_path, None))
    proc = subprocess.run(argv, env=child_env({"TRITON_INTERPRET": "1"}), check=False, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [(m.event, m.range_name) for m in parse_markers(proc.stderr)] == [
        ("start", "pt_0_4k"), ("start", "pt_1_4k"), ("measure", "pt_0_4k"), ("measure", "pt_1_4k")]
