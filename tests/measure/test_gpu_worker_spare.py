"""The GPU worker's hot spare: after the measuring process dies, the spare takes over without a cold start.

Runs on a CPU: the worker starts (imports, campaign, adapter) without a GPU, and a job fails there for lack of
CUDA, which is all this needs: the process that answers is the spare started beforehand, and a new spare is
started behind it.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from paretotune.campaign.load import load_campaign
from paretotune.campaign.resolve import make_adapter
from paretotune.measure.gpu import GpuWorker
from paretotune.measure.gpu_worker import GpuJob
from paretotune.runner.evaluator import measure_request
from paretotune.toolchain.ptxas import find_ptxas

QUICKSTART = Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml"


@pytest.fixture
def worker() -> GpuWorker:
    campaign = load_campaign(QUICKSTART)
    gpu = GpuWorker(measure_request(campaign), find_ptxas(), timeout_s=60, spares=2)
    yield gpu
    gpu.stop()


def test_spare_takes_over_after_the_worker_dies(worker: GpuWorker) -> None:
    job = GpuJob(candidate_id=1, config={"num_warps": 4}, acf_path=None, seed=1)
    status, _ = worker.run(job, n_shapes=1)  # starts the first worker; no CUDA here, so the job fails
    assert status == "failed"
    first, spare = worker._proc, worker._spares[0][0]
    assert first.is_alive() and spare.is_alive() and spare.pid != first.pid

    first.kill()
    first.join()
    status, reason = worker.run(job, n_shapes=1)
    assert status == "failed" and "cuda" in reason.lower() and "died" not in reason, reason  # a live worker answered
    assert worker._proc.pid == spare.pid  # the spare took over
    assert len(worker._spares) == 2 and not {p.pid for p, _ in worker._spares} & {first.pid, spare.pid}


def test_stop_ends_worker_and_spares(worker: GpuWorker) -> None:
    worker.run(GpuJob(candidate_id=1, config={"num_warps": 4}, acf_path=None, seed=1), n_shapes=1)
    procs = [worker._proc, *(p for p, _ in worker._spares)]
    assert len(procs) == 3
    worker.stop()
    assert not any(p.is_alive() for p in procs)


def test_prestarted_worker_is_warm_before_its_first_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``prestart`` spawns the first worker early; before it says ready it has compiled the default config on
    the CPU (the only way a kernel reaches this empty Triton cache: the job itself fails for lack of CUDA)."""
    import json

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    campaign = load_campaign(QUICKSTART)
    gpu = GpuWorker(measure_request(campaign), find_ptxas(), timeout_s=60)
    try:
        gpu.prestart()
        assert gpu._proc is None and len(gpu._spares) == 1 + gpu.spares  # the spares start with the first worker
        early = [proc for proc, _ in gpu._spares]
        status, _ = gpu.run(GpuJob(candidate_id=1, config={"num_warps": 8, "num_stages": 1}, acf_path=None, seed=1),
                            n_shapes=1)
        assert status == "failed"
        assert gpu._proc.pid == early[0].pid and gpu.last_start_s > 0
        assert [proc.pid for proc, _ in gpu._spares] == [proc.pid for proc in early[1:]]  # none started late
    finally:
        gpu.stop()
    built = [json.loads(p.read_text()) for p in (tmp_path / "cache").glob("*/*.json") if "__grp" not in p.name]
    default = make_adapter(campaign).default_config(campaign.shapes[0])
    assert [{"num_warps": b["num_warps"], "num_stages": b["num_stages"]} for b in built] == [default]
