"""Pool workers come from a fork server with the heavy modules already imported, yet behave like spawned ones:
they see the campaign process's environment as it was when the pool was made, and they exit when the
campaign process dies (tests/reliability/test_kill_resume.py kills real campaigns)."""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paretotune.build.pool import WorkerPool
from paretotune.records import Candidate, TrialRecord

pytestmark = pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(),
                                reason="the platform has no fork server")

_SEEN: dict[str, object] = {}
VAR = "PARETOTUNE_TEST_POOL_VAR"


def note_imports() -> None:
    """Worker initializer: what was imported before the worker did anything."""
    _SEEN["torch_at_start"] = "torch" in sys.modules


def report(candidate: Candidate) -> TrialRecord:
    return TrialRecord(candidate_id=candidate.candidate_id, generation=0, config={}, acf=None, is_baseline=False,
                       status="ok", extra={"var": os.environ.get(VAR), "pid": os.getpid(),
                                           "torch_at_start": _SEEN["torch_at_start"]})


def one(pool: WorkerPool) -> TrialRecord:
    try:
        (rec,) = pool.run([Candidate(candidate_id=1, generation=0, config={}, acf=None)])
    finally:
        pool.close()
    assert rec.status == "ok", rec.error
    return rec


def test_worker_sees_the_environment_of_its_pool_not_of_the_fork_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VAR, raising=False)
    first = one(WorkerPool(report, note_imports, (), 1, 60.0))  # starts the fork server (if no test did)
    assert first.extra["var"] is None
    monkeypatch.setenv(VAR, "set after the fork server started")
    second = one(WorkerPool(report, note_imports, (), 1, 60.0))
    assert second.extra["var"] == "set after the fork server started"
    monkeypatch.delenv(VAR)
    third = one(WorkerPool(report, note_imports, (), 1, 60.0))
    assert third.extra["var"] is None  # removed in the campaign process: removed in the worker
    assert len({first.extra["pid"], second.extra["pid"], third.extra["pid"]}) == 3


@pytest.mark.parametrize("parent_has_torch", [True, False])
def test_workers_start_with_the_heavy_modules_the_campaign_process_imported(tmp_path: Path,
                                                                            parent_has_torch: bool) -> None:
    """Run in a fresh interpreter: the fork server of this test process may have started with other modules."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        + ("import torch\n" if parent_has_torch else "")
        + "from paretotune.build.pool import WorkerPool\n"
        "from test_pool_forkserver import report, note_imports, one\n"
        "if __name__ == '__main__':\n"
        "    print('torch at worker start:', one(WorkerPool(report, note_imports, (), 1, 60.0)).extra['torch_at_start'])\n")
    out = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"torch at worker start: {parent_has_torch}" in out.stdout


def report_nice(candidate: Candidate) -> TrialRecord:
    return TrialRecord(candidate_id=candidate.candidate_id, generation=0, config={}, acf=None, is_baseline=False,
                       status="ok", extra={"nice": os.nice(0)})


def test_workers_run_at_the_niceness_the_pool_asks_for() -> None:
    def niceness(pool: WorkerPool) -> int:
        try:
            (rec,) = pool.run([Candidate(candidate_id=1, generation=0, config={}, acf=None)])
        finally:
            pool.close()
        return rec.extra["nice"]

    assert niceness(WorkerPool(report_nice, note_imports, (), 1, 60.0)) == os.nice(0)
    assert niceness(WorkerPool(report_nice, note_imports, (), 1, 60.0, nice=5)) == min(19, os.nice(0) + 5)


def test_helion_is_preloaded_only_with_a_cpu_build_of_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork server that imported helion leaves its children unable to initialize CUDA (measured on an H200:
    benchmarks/results/h200_fork_cuda.json); a CPU build of torch has no CUDA to break."""
    import torch

    from paretotune.build.pool import preload_modules

    monkeypatch.setitem(sys.modules, "helion", sys.modules.get("helion") or object())
    monkeypatch.setattr(torch.version, "cuda", None)
    assert {"torch", "helion"} <= set(preload_modules())
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    assert "torch" in preload_modules() and "helion" not in preload_modules()
