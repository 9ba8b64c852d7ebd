"""The batch runner end to end against tests/ncu/fake_ncu.py: mapping, split-and-retry, timeouts, errors.

The fake ncu runs the real child program (or the marker-less ncu_plain_child.py), filters launches through the
real ``--nvtx-include`` patterns and prints recorded H200 output, so the runner's subprocess handling, parsing
and bisection are exercised for real; only the GPU and its counters are simulated.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from paretotune.ncu import locate
from paretotune.ncu import run as run_module
from paretotune.ncu.batch import BatchItem, ChildRequest
from paretotune.ncu.child import python_child
from paretotune.ncu.command import NcuOptions
from paretotune.ncu.errors import NcuMetricError, NcuNotFoundError, NcuPermissionError, NcuSetupError
from paretotune.ncu.parse import parse_csv
from paretotune.ncu.locate import Ncu, find_ncu
from paretotune.ncu.run import BatchPolicy, run_batch

HERE = Path(__file__).resolve().parent
OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
L1 = "l1tex__throughput.avg.pct_of_peak_sustained_active"
DUR = "gpu__time_duration.sum"
OPTIONS = NcuOptions(metrics=(OCC, L1))
FAST = BatchPolicy(validate_metrics=False, timeout_base_s=60, timeout_per_item_s=0)
CHILD = python_child("ncu_fake_kernels:make_launch", sys_path=[str(HERE)])


def item(cid: int, shape: str = "s", **params: object) -> BatchItem:
    values = {OCC: 10.0 + cid, L1: 20.0 + cid / 4, DUR: 1000 * (cid + 1)}
    return BatchItem(cid, shape, {"values": values, **params})


def plain_child(request: ChildRequest) -> list[str]:
    """A child without paretotune's markers: the runner can only bisect."""
    spec = {"domain": request.nvtx_domain,
            "items": [{"range": i.range_name, "values": dict(i.params["values"]), "crash": bool(i.params.get("crash"))}
                      for i in request.items]}
    path = request.workdir / "plain.json"
    path.write_text(json.dumps(spec))
    return [sys.executable, str(HERE / "ncu_plain_child.py"), str(path)]


def sizes(result: object) -> list[int]:
    return [len(run.range_names) for run in result.runs]  # type: ignore[attr-defined]


def test_one_process_measures_every_item_and_maps_by_range(fake_ncu: Ncu, tmp_path: Path) -> None:
    items = [item(c, shape) for c in (1, 2, 3) for shape in ("M=64", "M=128")]
    result = run_batch(items, CHILD, OPTIONS, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert sizes(result) == [6]
    assert [r.item.key for r in result.items] == [i.key for i in items]
    for r in result.items:
        cid = int(r.item.candidate_id)
        assert r.ok, r.error
        assert r.metrics == {OCC: 10.0 + cid, L1: round(20.0 + cid / 4, 2)}
        assert r.units == {OCC: "%", L1: "%"}
        assert r.kernels == ("_fake_kernel",) and r.runs == 1
    run = result.runs[0]
    assert run.kind == "ok" and run.n_results == 6 and run.returncode == 0
    assert run.argv.count("--nvtx-include") == 6 and "pt_2_M-3d128/" in run.argv
    assert (Path(run.workdir) / "ncu.log").is_file() and (Path(run.workdir) / "child_spec.json").is_file()
    assert result.ncu_version == "2025.3.1.0"


def test_named_domain(fake_ncu: Ncu, tmp_path: Path) -> None:
    options = NcuOptions(metrics=(OCC,), nvtx_domain="paretotune")
    result = run_batch([item(1), item(2)], CHILD, options, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert all(r.ok for r in result.items)
    assert "paretotune@pt_1_s/" in result.runs[0].argv


def test_prefix_filter(fake_ncu: Ncu, tmp_path: Path) -> None:
    options = NcuOptions(metrics=(OCC,), nvtx_filter="prefix")
    result = run_batch([item(1), item(2)], CHILD, options, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert all(r.ok for r in result.items) and result.runs[0].argv.count("--nvtx-include") == 1


def test_several_kernels_in_one_range_are_combined(fake_ncu: Ncu, tmp_path: Path) -> None:
    options = NcuOptions(metrics=(OCC, DUR))
    result = run_batch([item(1, kernels=2), item(2)], CHILD, options, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    first, second = result.items
    assert first.kernels == ("_fake_kernel", "_fake_kernel")
    assert first.metrics[DUR] == 4000.0  # durations add up
    assert first.metrics[OCC] == 11.0  # duration-weighted mean of two equal launches
    assert second.metrics == {OCC: 12.0, DUR: 3000.0}


def test_python_error_in_one_candidate_costs_no_rerun(fake_ncu: Ncu, tmp_path: Path) -> None:
    items = [item(1), item(2, raise_in="build"), item(3, raise_in="measure"), item(4)]
    result = run_batch(items, CHILD, OPTIONS, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert sizes(result) == [4]
    status = {r.item.candidate_id: r for r in result.items}
    assert status[1].ok and status[4].ok
    assert not status[2].ok and "CompilationError" in status[2].error
    assert not status[3].ok and "fake error in measure" in status[3].error


def test_crash_during_warmup_isolates_the_suspect(fake_ncu: Ncu, tmp_path: Path) -> None:
    items = [item(c) for c in range(8)]
    items[3] = item(3, abort_in="warmup")
    result = run_batch(items, CHILD, OPTIONS, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert sizes(result) == [8, 1, 7]
    crashed = result.items[3]
    assert not crashed.ok and crashed.runs == 2 and "exited with code 134" in crashed.error
    assert [r.ok for r in result.items] == [True, True, True, False, True, True, True, True]
    assert result.items[0].metrics[OCC] == 10.0 and result.items[0].runs == 2
    assert [run.kind for run in result.runs] == ["app_exit", "app_exit", "ok"]


def test_crash_while_measuring_keeps_the_results_before_it(fake_ncu: Ncu, tmp_path: Path) -> None:
    items = [item(c) for c in range(8)]
    items[5] = item(5, abort_in="measure")
    result = run_batch(items, CHILD, OPTIONS, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert sizes(result) == [8, 1, 2]
    assert result.runs[0].n_results == 5
    assert [r.ok for r in result.items] == [True] * 5 + [False, True, True]
    assert [r.runs for r in result.items] == [1] * 5 + [2, 2, 2]


def test_sticky_cuda_error_reruns_only_the_rest(fake_ncu: Ncu, tmp_path: Path) -> None:
    items = [item(c) for c in range(6)]
    items[2] = item(2, sticky_in="measure")
    result = run_batch(items, CHILD, OPTIONS, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert sizes(result) == [6, 3]
    assert not result.items[2].ok and "illegal memory access" in result.items[2].error
    assert all(r.ok for i, r in enumerate(result.items) if i != 2)


def test_bisection_without_markers(fake_ncu: Ncu, tmp_path: Path) -> None:
    items = [item(c) for c in range(8)]
    items[5] = item(5, crash=True)
    result = run_batch(items, plain_child, OPTIONS, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert sizes(result) == [8, 4, 4, 2, 1, 1, 2]
    assert [r.ok for r in result.items] == [True] * 5 + [False, True, True]
    assert "exited with code 1" in result.items[5].error
    assert result.items[6].metrics == {OCC: 16.0, L1: 21.5}


def test_bisection_finds_two_crashers(fake_ncu: Ncu, tmp_path: Path) -> None:
    items = [item(c, crash=c in (1, 6)) for c in range(8)]
    result = run_batch(items, plain_child, OPTIONS, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert [r.ok for r in result.items] == [c not in (1, 6) for c in range(8)]
    assert sizes(result) == [8, 4, 2, 1, 1, 2, 4, 2, 2, 1, 1]


def test_run_budget(fake_ncu: Ncu, tmp_path: Path) -> None:
    items = [item(c, crash=c == 5) for c in range(8)]
    policy = BatchPolicy(validate_metrics=False, max_runs=3)
    result = run_batch(items, plain_child, OPTIONS, ncu=fake_ncu, policy=policy, workdir=tmp_path)
    assert len(result.runs) == 3
    assert [r.ok for r in result.items] == [True] * 4 + [False] * 4
    assert "used its 3 ncu runs" in result.items[4].error


def test_every_run_failing(fake_ncu: Ncu, tmp_path: Path) -> None:
    def broken(request: ChildRequest) -> list[str]:
        return [sys.executable, "-c", "import sys; sys.exit(3)"]

    result = run_batch([item(c) for c in range(4)], broken, OPTIONS, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert sizes(result) == [4, 2, 1, 1, 2, 1, 1]
    assert all(not r.ok and "exited with code 3" in r.error for r in result.items)


def test_timeout_kills_the_batch_and_isolates_the_hang(fake_ncu: Ncu, tmp_path: Path) -> None:
    items = [item(0), item(1, hang_in="measure"), item(2)]
    policy = BatchPolicy(validate_metrics=False, timeout_base_s=2.0, timeout_per_item_s=0.0, kill_grace_s=2.0)
    result = run_batch(items, CHILD, OPTIONS, ncu=fake_ncu, policy=policy, workdir=tmp_path)
    assert sizes(result) == [3, 1, 2]
    assert [run.timed_out for run in result.runs] == [True, True, False]
    assert [r.ok for r in result.items] == [True, False, True]
    assert "timed out" in result.items[1].error
    assert result.runs[0].wall_s < 2.0 + 2.0 + 2.0


def test_ranges_without_kernels_fail_without_retry(fake_ncu: Ncu, tmp_path: Path) -> None:
    def wrong_domain(request: ChildRequest) -> list[str]:
        return CHILD(ChildRequest(request.items, request.workdir, "elsewhere"))

    options = NcuOptions(metrics=(OCC,), nvtx_domain="paretotune")
    result = run_batch([item(1), item(2)], wrong_domain, options, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert sizes(result) == [2]
    assert result.runs[0].kind == "no_kernels"
    for r in result.items:
        assert not r.ok
        assert r.error.startswith(f"no kernel was profiled in NVTX range(s) {r.item.range_name}")
        assert "push/pop" in r.error
    (warning,) = result.warnings
    assert "pt_1_s, pt_2_s" in warning


def test_non_numeric_value_fails_the_item(fake_ncu: Ncu, tmp_path: Path) -> None:
    bad = BatchItem(2, "s", {"values": {OCC: "n/a", L1: 3.0}})
    result = run_batch([item(1), bad], CHILD, OPTIONS, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert result.items[0].ok
    assert not result.items[1].ok and f"{OCC}='n/a'" in result.items[1].error


def test_unknown_metric_from_the_cells(fake_ncu: Ncu, tmp_path: Path) -> None:
    options = NcuOptions(metrics=(OCC, "foo__bar.sum"))
    with pytest.raises(NcuMetricError, match="foo__bar.sum"):
        run_batch([item(1)], CHILD, options, ncu=fake_ncu, policy=FAST, workdir=tmp_path)


def test_unknown_metric_from_query_before_running(fake_ncu: Ncu, tmp_path: Path) -> None:
    options = NcuOptions(metrics=(OCC, "foo__bar.sum", "dram__bytes_write.avg", "launch__grid_size"))
    with pytest.raises(NcuMetricError, match="foo__bar.sum") as info:
        run_batch([item(1)], CHILD, options, ncu=fake_ncu, policy=BatchPolicy(), workdir=tmp_path)
    assert "dram__bytes_write" not in str(info.value) and "launch__" not in str(info.value)
    assert not list(tmp_path.glob("batch-*"))  # nothing ran


def test_permission_error_stops_everything(fake_ncu: Ncu, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    with pytest.raises(NcuPermissionError, match="NVreg_RestrictProfilingToAdminUsers=0"):
        run_batch([item(c) for c in range(4)], CHILD, OPTIONS, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    (batch,) = tmp_path.glob("batch-*")
    assert [p.name for p in batch.iterdir()] == ["run-000"]  # no retries


def test_ncu_rejecting_its_command_line(fake_ncu: Ncu, tmp_path: Path) -> None:
    options = NcuOptions(metrics=(OCC,), extra_args=("--bogus-flag",))
    with pytest.raises(NcuSetupError, match="unrecognised option '--bogus-flag'"):
        run_batch([item(1), item(2)], CHILD, options, ncu=fake_ncu, policy=FAST, workdir=tmp_path)


def test_report_mode_without_ncu_report_uses_ncu_import(fake_ncu: Ncu, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # import ncu_report -> ImportError
    options = NcuOptions(metrics=(OCC,), output="report")
    result = run_batch([item(1), item(2)], CHILD, options, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert [r.metrics for r in result.items] == [{OCC: 11.0}, {OCC: 12.0}]
    assert "-o" in result.runs[0].argv


def test_report_mode_reads_with_ncu_report(fake_ncu: Ncu, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ncu_report")
    seen: list[Path] = []

    def fake_read(path: Path, metrics: object) -> list:
        seen.append(path)
        return parse_csv(path.read_text())  # the fake's "report" is CSV text

    monkeypatch.setattr(run_module, "read_report", fake_read)
    options = NcuOptions(metrics=(OCC,), output="report")
    result = run_batch([item(1)], CHILD, options, ncu=fake_ncu, policy=FAST, workdir=tmp_path)
    assert result.items[0].metrics == {OCC: 11.0}
    assert seen and seen[0].name == "report.ncu-rep"


def test_duplicate_items_rejected(fake_ncu: Ncu) -> None:
    with pytest.raises(ValueError, match="duplicate"):
        run_batch([item(1), item(1)], CHILD, OPTIONS, ncu=fake_ncu, policy=FAST)


def test_empty_batch(fake_ncu: Ncu) -> None:
    assert run_batch([], CHILD, OPTIONS, ncu=fake_ncu).items == ()


def test_find_ncu(fake_ncu: Ncu, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARETOTUNE_NCU", str(fake_ncu.path))
    assert find_ncu() == Ncu(fake_ncu.path, "2025.3.1.0")
    monkeypatch.setenv("PARETOTUNE_NCU", str(tmp_path / "missing"))
    with pytest.raises(NcuNotFoundError, match="PARETOTUNE_NCU=.*no such executable"):
        find_ncu()
    monkeypatch.delenv("PARETOTUNE_NCU")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(locate, "_FALLBACK_PATHS", ())
    monkeypatch.setattr(locate.glob, "glob", lambda pattern: [])
    with pytest.raises(NcuNotFoundError, match="not found") as info:
        find_ncu()
    assert "PARETOTUNE_NCU" in str(info.value) and "\n" not in str(info.value)
    monkeypatch.setenv("PATH", str(fake_ncu.path.parent))
    assert find_ncu().path == fake_ncu.path


def test_missing_ncu_is_a_user_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from paretotune.errors import UserError

    monkeypatch.setenv("PARETOTUNE_NCU", str(tmp_path / "nope"))
    with pytest.raises(UserError):
        run_batch([item(1)], CHILD, OPTIONS)
