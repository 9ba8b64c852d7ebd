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
def test_workers_start_with_torch_imported_whether_or_not_the_campaign_process_has_it(tmp_path: Path,
                                                                                      parent_has_torch: bool) -> None:
    """Run in a fresh interpreter: the fork server of this test process may have started with other modules. The
    server imports torch and Triton whatever the campaign process has imported: a campaign starts it before its
    own import of torch, so that the two imports overlap (runner/session.py)."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        + ("import torch\n" if parent_has_torch else "")
        + "from paretotune.build.pool import WorkerPool\n"
        "from test_pool_forkserver import report, note_imports, one\n"
        "if __name__ == '__main__':\n"
        "    rec = one(WorkerPool(report, note_imports, (), 1, 60.0))\n"
        "    print('torch at worker start:', rec.extra['torch_at_start'], 'here:', 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"torch at worker start: True here: {parent_has_torch}" in out.stdout


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


def test_a_helion_campaign_asks_its_fork_server_for_helion_and_turns_the_nvml_check_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from paretotune.build import fork_server
    from paretotune.compat import torch as compat_torch

    monkeypatch.delitem(sys.modules, "helion", raising=False)
    monkeypatch.setattr(fork_server, "_helion_asked", False)
    monkeypatch.delenv(compat_torch.NVML_CHECK, raising=False)
    assert fork_server.HELION_PRELOAD not in fork_server.preload_modules()  # a Triton campaign's server
    fork_server.worker_context(helion=True)
    assert fork_server.preload_modules()[:3] == ["torch", "triton", fork_server.HELION_PRELOAD]
    assert os.environ[compat_torch.NVML_CHECK] == "1"
    monkeypatch.setenv(compat_torch.NVML_CHECK, "0")  # the user's choice stands
    fork_server.worker_context(helion=True)
    assert os.environ[compat_torch.NVML_CHECK] == "0"


# torch as on a GPU host: a CUDA build, its availability check asking the driver unless NVML answers (no NVML here)
AS_IF_CUDA = "import torch; torch.version.cuda = '13.0'; "


@pytest.mark.parametrize(("setup", "imported"), [
    ("", True),  # a CPU build of torch: no CUDA to break
    (AS_IF_CUDA, False),  # the NVML check off: Helion's import would ask the driver
    (AS_IF_CUDA + "import os; os.environ['PYTORCH_NVML_BASED_CUDA_CHECK'] = '1'; ", False),  # on, NVML fails
], ids=["cpu-torch", "cuda-torch", "cuda-torch-nvml-failing"])
def test_the_fork_servers_helion_import_happens_only_where_it_leaves_cuda_to_the_children(setup: str,
                                                                                         imported: bool) -> None:
    """A fork server whose Helion import asked the CUDA driver leaves its children unable to initialize CUDA; with
    torch's NVML check, and NVML answering, it does not (measured on an H200:
    benchmarks/results/import_cuda_h200/fork_cuda.json). The server decides once it has torch: a fresh interpreter
    each, as the server is."""
    code = (f"import os, sys, torch; os.environ.pop('PYTORCH_NVML_BASED_CUDA_CHECK', None); {setup}"
            "import paretotune.build.helion_preload; print('helion' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == str(imported)


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
