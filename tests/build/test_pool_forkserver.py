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
        "    rec = one(WorkerPool(report, note_imports, (), 1, 60.0))\n"
        "    print('torch at worker start:', rec.extra['torch_at_start'])\n")
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


def test_helion_is_preloaded_only_where_its_import_leaves_cuda_to_the_children(monkeypatch: pytest.MonkeyPatch
                                                                                ) -> None:
    """A fork server whose Helion import asked the CUDA driver leaves its children unable to initialize CUDA; with
    torch's NVML check it asks NVML and the children can (measured on an H200:
    benchmarks/results/import_cuda_h200/fork_cuda.json); a CPU build of torch has no CUDA to break."""
    import torch

    from paretotune.build import fork_server
    from paretotune.compat import torch as compat_torch

    monkeypatch.delitem(sys.modules, "helion", raising=False)
    monkeypatch.setattr(fork_server, "_helion_asked", False)
    monkeypatch.delenv(compat_torch.NVML_CHECK, raising=False)
    monkeypatch.setattr(torch.version, "cuda", None)
    assert "helion" not in fork_server.preload_modules()  # a Triton campaign's server does not import it
    fork_server.worker_context(helion=True)
    assert {"torch", "helion"} <= set(fork_server.preload_modules())
    assert os.environ[compat_torch.NVML_CHECK] == "1"  # asking for Helion turns torch's NVML check on
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(compat_torch, "nvml_device_count", lambda: 1)
    assert "helion" in fork_server.preload_modules()
    monkeypatch.setattr(compat_torch, "nvml_device_count", lambda: -1)  # NVML failed: torch would ask the driver
    assert "torch" in fork_server.preload_modules() and "helion" not in fork_server.preload_modules()
    monkeypatch.setattr(compat_torch, "nvml_device_count", lambda: 1)
    monkeypatch.setenv(compat_torch.NVML_CHECK, "0")  # the user's choice stands
    fork_server.worker_context(helion=True)
    assert os.environ[compat_torch.NVML_CHECK] == "0" and "helion" not in fork_server.preload_modules()


HELION_PROBE = """
import sys
sys.path.insert(0, {here!r})
import torch
from paretotune.build.fork_server import worker_context
from paretotune.build.pool import WorkerPool
from test_pool_forkserver import one, report_modules, note_modules
if __name__ == '__main__':
    worker_context(helion={asked})
    rec = one(WorkerPool(report_modules, note_modules, (), 1, 120.0))
    print("helion at worker start:", rec.extra["helion_at_start"], "here:", "helion" in sys.modules)
"""


def note_modules() -> None:
    _SEEN["helion_at_start"] = "helion" in sys.modules


def report_modules(candidate: Candidate) -> TrialRecord:
    return TrialRecord(candidate_id=candidate.candidate_id, generation=0, config={}, acf=None, is_baseline=False,
                       status="ok", extra={"helion_at_start": _SEEN["helion_at_start"]})


@pytest.mark.parametrize("asked", [True, False])
def test_a_helion_campaigns_workers_start_with_helion_imported(tmp_path: Path, asked: bool) -> None:
    """In a fresh interpreter that has not imported Helion itself (a GPU host's campaign process starts its
    workers before its own Helion import): the fork server imports it only when the campaign asks."""
    script = tmp_path / "probe.py"
    script.write_text(HELION_PROBE.format(here=str(Path(__file__).parent), asked=asked))
    out = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"helion at worker start: {asked} here: False" in out.stdout
