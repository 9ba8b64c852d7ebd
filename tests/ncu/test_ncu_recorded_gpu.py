"""The GPU tests of test_ncu_gpu.py replayed on CPU from what ncu really printed on an H200.

tests/fixtures/ncu/h200_gpu_tests/<test>-run<N>/ holds each ncu run of those tests (ncu.log, the child's
stdout/stderr, its spec, the command and exit code). fake_ncu.py's replay mode hands a run back to
``run_batch``, so the code that ran on the GPU (command line, child spec, CSV parsing, grouping by NVTX range,
diagnosis, split-and-retry) is checked against real GPU output rather than only hand-picked samples, and the
GPU tests' assertions are repeated here with the same tolerances.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from test_ncu_gpu import DUR, L1, METRICS, OCC, REGS, THEO, assert_close

from paretotune.ncu.batch import BatchItem, BatchResult
from paretotune.ncu.child import python_child
from paretotune.ncu.command import NcuOptions
from paretotune.ncu.errors import RETRYABLE_KINDS, diagnose, tool_lines
from paretotune.ncu.parse import parse_csv
from paretotune.ncu.locate import Ncu
from paretotune.ncu.run import BatchPolicy, run_batch

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "ncu" / "h200_gpu_tests"
Replay = Callable[[Sequence[str], Sequence[str]], BatchResult]


def ncu_flags(argv: Sequence[str]) -> list[str]:
    """The ncu flags without the paths: everything between the binary and ``--log-file``."""
    return list(argv[1:argv.index("--log-file")])


@pytest.fixture
def replay(fake_ncu: Ncu, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Replay:
    """Run the items of recording ``names[0]`` through run_batch; ncu run N replays recording ``names[N]``."""

    def run(names: Sequence[str], metrics: Sequence[str]) -> BatchResult:
        dirs = [RECORDED / name for name in names]
        spec = json.loads((dirs[0] / "child_spec.json").read_text())
        items = [BatchItem(i["candidate_id"], i["shape"], i["params"]) for i in spec["items"]]
        factories = {i["range"]: i["factory"] for i in spec["items"]}
        child = python_child(lambda item: factories[item.range_name], sys_path=spec["sys_path"])
        monkeypatch.setenv("FAKE_NCU_REPLAY", os.pathsep.join(map(str, dirs)))
        result = run_batch(items, child, NcuOptions(tuple(metrics), nvtx_domain=spec["nvtx_domain"]), ncu=fake_ncu,
                           policy=BatchPolicy(validate_metrics=False), workdir=tmp_path)
        assert len(result.runs) == len(dirs)
        for run_record, recorded in zip(result.runs, dirs):  # the runner asked for exactly what was recorded
            recorded_argv = (recorded / "command.txt").read_text().splitlines()[0].split()
            assert ncu_flags(run_record.argv) == ncu_flags(recorded_argv)
            spec_now = json.loads((Path(run_record.workdir) / "child_spec.json").read_text())
            assert spec_now == json.loads((recorded / "child_spec.json").read_text())
        return result

    return run


@pytest.mark.parametrize("domain", ["default", "paretotune"])
def test_triton_batch_matches_single_runs(replay: Replay, domain: str) -> None:
    batch = replay([f"triton-batch-{domain}-run0"], METRICS)
    assert batch.runs[0].kind == "ok" and batch.runs[0].n_results == 4
    for result in batch.items:
        assert result.ok, result.error
        assert result.kernels == ("_pt_copy",)
    first = {"default": {OCC: 30.57, THEO: 100.0, L1: 23.51, DUR: 41664.0, REGS: 16.0},  # DUR printed "41,664"
             "paretotune": {OCC: 32.75, THEO: 100.0, L1: 23.35, DUR: 41696.0, REGS: 16.0}}[domain]
    assert batch.items[0].metrics == first
    assert batch.items[0].units == {OCC: "%", THEO: "%", L1: "%", DUR: "ns", REGS: "register/thread"}
    occupancy = [r.metrics[OCC] for r in batch.items]
    assert occupancy[0] < 45 < min(occupancy[1:])  # 2 warps per block vs 4-8
    for result in batch.items:
        single = replay([f"triton-single-{result.item.candidate_id}-{domain}-run0"], METRICS)
        assert single.items[0].ok, single.items[0].error
        assert_close(result.metrics, single.items[0].metrics)


def test_helion_batch_matches_single_runs(replay: Replay) -> None:
    batch = replay(["helion-batch-run0"], METRICS)
    assert [r.metrics[REGS] for r in batch.items] == [48.0, 64.0, 62.0]
    for result in batch.items:
        assert result.ok, result.error
        assert result.kernels == ("_helion_softmax",)
        single = replay([f"helion-single-{result.item.candidate_id}-run0"], METRICS)
        assert single.items[0].ok, single.items[0].error
        assert_close(result.metrics, single.items[0].metrics)


def test_illegal_address_candidate_is_isolated(replay: Replay) -> None:
    result = replay(["triton-illegal-address-run0", "triton-illegal-address-run1"], (OCC,))
    crashed, retry = result.runs
    assert crashed.kind == "app_exit" and crashed.kind in RETRYABLE_KINDS and crashed.returncode == 3
    assert crashed.n_results == 0 and "exited with code 3" in crashed.message
    # The child's "failed pt_99_16M" marker settles candidate 99 at once; only the other four are re-run.
    assert retry.kind == "ok" and retry.range_names == ("pt_0_16M", "pt_1_16M", "pt_2_16M", "pt_3_16M")
    status = {r.item.candidate_id: r for r in result.items}
    assert not status[99].ok and status[99].runs == 1
    assert "an illegal memory access was encountered" in status[99].error
    assert all(status[c].ok and status[c].runs == 2 for c in range(4)), [status[c].error for c in range(4)]
    assert status[0].metrics[OCC] < 45 < min(status[c].metrics[OCC] for c in (1, 2, 3))


def test_report_mode_run() -> None:
    """Report mode puts no CSV in the log and the .ncu-rep was not recorded: only the log is checked."""
    text = (RECORDED / "triton-report-run0" / "ncu.log").read_text()
    assert diagnose(text, 0).kind == "ok" and parse_csv(text) == []
    assert [line.split(" - ")[0] for line in tool_lines(text, "PROF") if "Profiling" in line] == \
        ['Profiling "_pt_copy"'] * 4
