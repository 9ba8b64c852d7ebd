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
        gpu.prestarted()
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


# In a fresh interpreter: the fork server is the process's first, and its preloads include a module that takes a
# while to import and notes when it is done (a GPU host's torch and Triton: seconds).
SLOW_PRELOAD = """
import sys, time
sys.path.insert(0, {folder!r})
from paretotune.build import fork_server
fork_server.PRELOAD = (*fork_server.PRELOAD, "slow_preload")
from paretotune.campaign.load import load_campaign
from paretotune.measure.gpu import GpuWorker
from paretotune.runner.evaluator import measure_request
from paretotune.toolchain.ptxas import find_ptxas
gpu = GpuWorker(measure_request(load_campaign({campaign!r})), find_ptxas(), timeout_s=60, spares=0)
gpu.prestart()
import os
print("returned before the fork server was ready:", not os.path.exists({done!r}), flush=True)
gpu.prestarted()
print("spawned once it was:", os.path.exists({done!r}), len(gpu._spares), flush=True)
gpu.stop()
"""


def test_prestart_does_not_wait_for_the_fork_server(tmp_path: Path) -> None:
    """A process from the fork server starts only once the server has imported its preloads; ``prestart`` leaves
    that wait to a thread, so the campaign imports its kernel meanwhile instead of after it."""
    import subprocess
    import sys

    done = tmp_path / "preloaded"
    (tmp_path / "slow_preload.py").write_text(f"import time\ntime.sleep(3)\nopen({str(done)!r}, 'w').close()\n")
    code = SLOW_PRELOAD.format(folder=str(tmp_path), campaign=str(QUICKSTART), done=str(done))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)})
    assert out.stdout.splitlines() == ["returned before the fork server was ready: True", "spawned once it was: True 1"]
