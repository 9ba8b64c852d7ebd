"""On a GPU with ncu: batches of real Triton and Helion candidates against single-candidate ncu runs.

Skipped without CUDA or ncu. Set ``PARETOTUNE_NCU_RECORD_DIR`` to keep every run's ``ncu.log`` and child
output there (to be copied into tests/fixtures/ncu as new recorded samples).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from paretotune.ncu.batch import BatchItem, BatchResult, ChildCommand
from paretotune.ncu.child import python_child
from paretotune.ncu.command import NcuOptions
from paretotune.ncu.run import BatchPolicy, run_batch

pytestmark = pytest.mark.gpu

HERE = Path(__file__).resolve().parent
OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEO = "sm__maximum_warps_per_active_cycle_pct"
L1 = "l1tex__throughput.avg.pct_of_peak_sustained_active"
DUR = "gpu__time_duration.sum"
REGS = "launch__registers_per_thread"
METRICS = (OCC, THEO, L1, DUR, REGS)
N = 1 << 24
# The four configs of probe_triton_k.py; ncu.md records their values on the H200.
CONFIGS = [(256, 2), (512, 4), (1024, 8), (2048, 4)]


def child(factory: str) -> ChildCommand:
    return python_child(f"ncu_gpu_kernels:{factory}", sys_path=[str(HERE)])


def copy_items(shape: str = "16M") -> list[BatchItem]:
    return [BatchItem(i, shape, {"n": N, "block": b, "num_warps": w}) for i, (b, w) in enumerate(CONFIGS)]


def record(result: BatchResult, name: str) -> None:
    target = os.environ.get("PARETOTUNE_NCU_RECORD_DIR")
    if not target:
        return
    for run in result.runs:
        dest = Path(target) / f"{name}-run{run.index}"
        dest.mkdir(parents=True, exist_ok=True)
        for f in ("ncu.log", "stdout.txt", "stderr.txt", "child_spec.json", "report.ncu-rep"):
            if (Path(run.workdir) / f).is_file():
                shutil.copy(Path(run.workdir) / f, dest / f)
        (dest / "command.txt").write_text(" ".join(run.argv) + f"\n# rc={run.returncode} wall_s={run.wall_s}\n")


def assert_close(batch: dict[str, float], single: dict[str, float]) -> None:
    assert batch[REGS] == single[REGS] and batch[THEO] == single[THEO]  # launch-derived: identical
    # achieved occupancy repeats to a few points, not to a share of itself: the 2-warp copy on an H100 read 51.5 to
    # 59.9 % over twelve runs in two calls, batch and single alike (benchmarks/results/h100_gpu_tests_2026-12-06b/);
    # 8 points is the old 10 % at ~80 %, and far under what profiling the wrong launch moves (53 against 80)
    assert batch[OCC] == pytest.approx(single[OCC], abs=8.0)
    assert batch[L1] == pytest.approx(single[L1], rel=0.10)
    assert batch[DUR] == pytest.approx(single[DUR], rel=0.15)


@pytest.mark.parametrize("domain", [None, "paretotune"])
def test_triton_batch_matches_single_runs(tmp_path: Path, domain: str | None) -> None:
    options = NcuOptions(metrics=METRICS, nvtx_domain=domain)
    items = copy_items()
    batch = run_batch(items, child("make_copy_launch"), options, workdir=tmp_path)
    record(batch, f"triton-batch-{domain or 'default'}")
    assert len(batch.runs) == 1 and batch.runs[0].kind == "ok", batch.runs
    for result in batch.items:
        assert result.ok, result.error
        assert result.kernels == ("_pt_copy",)
    occupancy = [r.metrics[OCC] for r in batch.items]
    # 2 warps per block sit well under 4-8: ncu.md's H200 31 % against 77-81 %, an H100 alone 58-61 % against
    # 78-84 % (benchmarks/results/h100_gpu_tests_2026-12-05/): the level is the device's, the order is not
    assert occupancy[0] < 0.85 * min(occupancy[1:]), occupancy
    for item, result in zip(items, batch.items):
        single = run_batch([item], child("make_copy_launch"), options, workdir=tmp_path,
                           policy=BatchPolicy(validate_metrics=False))
        record(single, f"triton-single-{item.candidate_id}-{domain or 'default'}")
        assert single.items[0].ok, single.items[0].error
        assert_close(result.metrics, single.items[0].metrics)


def test_report_mode_matches_csv_mode(tmp_path: Path) -> None:
    items = copy_items()
    csv_run = run_batch(items, child("make_copy_launch"), NcuOptions(metrics=METRICS), workdir=tmp_path)
    rep_run = run_batch(items, child("make_copy_launch"), NcuOptions(metrics=METRICS, output="report"),
                        workdir=tmp_path)
    record(rep_run, "triton-report")
    for a, b in zip(csv_run.items, rep_run.items):
        assert a.ok and b.ok, (a.error, b.error)
        assert_close(b.metrics, a.metrics)


def test_several_shapes_in_one_batch(tmp_path: Path) -> None:
    items = [BatchItem(c, f"n{n}", {"n": n, "block": 1024, "num_warps": 4}) for c in (0, 1) for n in (1 << 20, N)]
    result = run_batch(items, child("make_copy_launch"), NcuOptions(metrics=(DUR, OCC)), workdir=tmp_path)
    assert all(r.ok for r in result.items), [r.error for r in result.items]
    by_key = result.by_key()
    assert by_key[(0, f"n{N}")].metrics[DUR] > 4 * by_key[(0, "n1048576")].metrics[DUR]


def test_illegal_address_candidate_is_isolated(tmp_path: Path) -> None:
    items = copy_items()
    items.insert(2, BatchItem(99, "16M", {"n": N}))

    def factory(item: BatchItem) -> str:
        return "ncu_gpu_kernels:make_oob_launch" if item.candidate_id == 99 else "ncu_gpu_kernels:make_copy_launch"

    result = run_batch(items, python_child(factory, sys_path=[str(HERE)]), NcuOptions(metrics=(OCC,)),
                       workdir=tmp_path)
    record(result, "triton-illegal-address")
    status = {r.item.candidate_id: r for r in result.items}
    assert not status[99].ok and "illegal" in status[99].error.lower()
    assert all(status[c].ok for c in range(4)), [status[c].error for c in range(4)]


def test_helion_candidates(tmp_path: Path) -> None:
    pytest.importorskip("helion")
    configs = [(1, 4), (2, 8), (4, 16)]  # rows per program, warps
    items = [BatchItem(i, "4096x4096", {"rows": 4096, "cols": 4096, "block": b, "num_warps": w})
             for i, (b, w) in enumerate(configs)]
    options = NcuOptions(metrics=METRICS)
    batch = run_batch(items, child("make_helion_launch"), options, workdir=tmp_path)
    record(batch, "helion-batch")
    for item, result in zip(items, batch.items):
        assert result.ok, result.error
        assert result.kernels == ("_helion_softmax",)
        single = run_batch([item], child("make_helion_launch"), options, workdir=tmp_path,
                           policy=BatchPolicy(validate_metrics=False))
        record(single, f"helion-single-{item.candidate_id}")
        assert single.items[0].ok, single.items[0].error
        assert_close(result.metrics, single.items[0].metrics)
