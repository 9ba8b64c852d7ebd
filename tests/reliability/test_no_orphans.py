"""No process a run starts outlives it, and a kernel file's import runs once per process that needs it.

The 2026-12-01 audit (PARETOTUNE_IMPORT_TIMEOUT_S=5): a kernel file that forked 3 sleeping children at import
got "did not finish within 5 s" (it had finished) and left 11 processes behind, for about 5 minutes; a caller
reading the CLI's stdout waited for them. ``raise KeyboardInterrupt`` at import printed a 20-line traceback
from a pool worker; a kernel failing at import ran 3 times and its output was echoed 3 times; killed runs left
``paretotune-ptxas-*`` folders in the temp folder.

Each CLI here runs in a subprocess in its own session, so every process it starts (and every process those
start) can be counted by session id after it exits, however it exits.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from reliability.conftest import QUICKSTART, cli, cli_env

SLEEPER = "import os, time\nfor _ in range(3):\n    if os.fork() == 0:\n        time.sleep(120)\n        os._exit(0)\n"
SPEC = "from paretotune.kernels.bundled.softmax import triton_softmax as spec\n"


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes of session ``sid``."""
    from paretotune.processes import process_table

    return [pid for pid, state, _, _, session in process_table() if session == sid and state != "Z"]


def campaign_with_kernel(folder: Path, source: str, **search: int) -> Path:
    """The CPU quickstart (one generation, two workers) tuning the kernel file ``source``."""
    (folder / "kernel.py").write_text(source)
    data = yaml.safe_load(QUICKSTART)
    data["kernel"] = {"source": "kernel.py:spec"}
    data["search"].update(generations=1, pool_size=search.get("pool_size", 9))
    data["evaluation"]["workers"] = 2
    path = folder / "campaign.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run_in_own_session(folder: Path, campaign: Path, **env: str) -> tuple[subprocess.Popen[str], str, str]:
    proc = subprocess.Popen(cli("run", str(campaign), "--out", str(folder / "run"), "--quiet"), cwd=folder,
                            env=cli_env(PARETOTUNE_IMPORT_TIMEOUT_S="20", **env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=300)  # returns once nothing holds its stdout and stderr open
    except subprocess.TimeoutExpired:
        _kill_session(proc.pid, after_s=0.0)
        raise
    return proc, out, err


def _kill_session(sid: int, after_s: float) -> list[int]:
    """The session's processes left ``after_s`` seconds from now; killed, so no test leaves any behind."""
    time.sleep(after_s)
    left = session_members(sid)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return left


@pytest.mark.parametrize("kernel", ["no_spec", "with_spec"])
def test_a_kernel_that_forks_at_import_leaves_no_process(tmp_path: Path, kernel: str) -> None:
    """Without a ``spec`` the run is refused (the trial import finished: no "did not finish" message); with
    one it runs to the end. Either way nothing of its session is left 2 s after the CLI exits: not the
    children forked in the trial, in the CLI's own import, or in the pool workers' imports."""
    campaign = campaign_with_kernel(tmp_path, SLEEPER + (SPEC if kernel == "with_spec" else ""))
    proc, _, err = run_in_own_session(tmp_path, campaign)
    left = _kill_session(proc.pid, after_s=2.0)
    if kernel == "no_spec":
        assert proc.returncode == 2, err
        assert err.strip().splitlines() == [f"paretotune: error: {campaign.resolve()}: kernel.source: module "
                                            "'kernel.py' has no attribute 'spec'"], err
    else:
        assert proc.returncode == 0, err[-3000:]
    assert left == [], f"{len(left)} processes outlived the CLI"


def test_sigterm_mid_run_leaves_no_process(tmp_path: Path) -> None:
    """SIGTERM (what the service's cancel sends first) while workers build: the CLI unwinds and reaps."""
    campaign = campaign_with_kernel(tmp_path, SLEEPER + SPEC, pool_size=40)
    proc = subprocess.Popen(cli("run", str(campaign), "--out", str(tmp_path / "run"), "--quiet"), cwd=tmp_path,
                            env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        results = tmp_path / "run" / "results.jsonl"
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None and \
                (not results.exists() or len(results.read_text().splitlines()) < 3):
            time.sleep(0.2)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        left = _kill_session(proc.pid, after_s=2.0)
    assert proc.returncode == 130, err
    assert left == [], f"{len(left)} processes outlived the CLI"


def test_keyboard_interrupt_at_import_is_one_line(tmp_path: Path) -> None:
    campaign = campaign_with_kernel(tmp_path, "raise KeyboardInterrupt\n")
    proc, out, err = run_in_own_session(tmp_path, campaign)
    _kill_session(proc.pid, after_s=0.0)
    assert proc.returncode == 2
    assert len(err.strip().splitlines()) == 1, err
    assert re.match(r"paretotune: error: .*kernel\.source: cannot import .*kernel\.py \(KeyboardInterrupt", err), err
    assert "Traceback" not in out + err


COUNTED = ("import os\nwith open(os.environ['IMPORTS_LOG'], 'a') as fh:\n    fh.write(f'{os.getpid()}\\n')\n"
           "print('MARKER-' * 1_500_000)\n")  # 10.5 MB (the 2026-12-04 audit's 10 MB print reached the terminal)


def test_a_failing_kernel_is_imported_once_and_prints_nothing(tmp_path: Path) -> None:
    """A kernel file that prints then fails at import runs in the trial import only (the early workers wait
    for the trial), and what it printed reaches no output: the error line says why it failed."""
    log = tmp_path / "imports.log"
    campaign = campaign_with_kernel(tmp_path, COUNTED + "raise ValueError('broken on purpose')\n")
    proc, out, err = run_in_own_session(tmp_path, campaign, IMPORTS_LOG=str(log))
    _kill_session(proc.pid, after_s=0.0)
    assert proc.returncode == 2 and "ValueError: broken on purpose" in err, err
    assert len(log.read_text().splitlines()) == 1
    assert "MARKER" not in out + err


@pytest.fixture(scope="module")
def printing_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.Popen[str], str, Path, Path, Path]:
    """One real run of a kernel file that prints at import and logs each import's pid, started with a ptxas
    temp folder of a process that is gone and one of a live process (this one) in the temp folder."""
    folder = tmp_path_factory.mktemp("printing-run")
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = Path(tempfile.gettempdir()) / f"paretotune-ptxas-{dead.pid}-test"
    live = Path(tempfile.gettempdir()) / f"paretotune-ptxas-{os.getpid()}-test"
    for path in (stale, live):
        path.mkdir(exist_ok=True)
        (path / "k.ptx").write_text("left by a killed worker")
    log = folder / "imports.log"
    proc, out, err = run_in_own_session(folder, campaign_with_kernel(folder, COUNTED + SPEC), IMPORTS_LOG=str(log))
    assert proc.returncode == 0, err[-3000:]
    yield proc, out + err, log, stale, live
    for path in (stale, live):
        if path.exists():
            for child in path.iterdir():
                child.unlink()
            path.rmdir()


def test_a_kernel_is_imported_once_per_process_and_printed_once(printing_run: tuple) -> None:
    """The trial child, the CLI and each of the two workers import it once each; only the trial's output is
    shown, capped, with a line saying how much it printed (the audits: a 5 MB print became 15 MB, then a
    10 MB print reached the terminal whole)."""
    from paretotune.campaign.trial_import import OUTPUT_CAP_BYTES

    _, output, log, _, _ = printing_run
    pids = log.read_text().split()
    assert len(pids) == len(set(pids)) == 4, pids
    printed = len("MARKER-") * 1_500_000 + 1
    assert output.count("MARKER-") == OUTPUT_CAP_BYTES // len("MARKER-"), len(output)
    assert (f"paretotune: the campaign's code printed {printed} bytes while being imported; only the first "
            f"{OUTPUT_CAP_BYTES} are shown") in output


def test_ptxas_folders_of_dead_processes_are_cleaned(printing_run: tuple) -> None:
    """A run removes the ptxas temp folders of processes that are gone (a killed run's workers), keeps those
    of live ones, and leaves none of its own workers' behind."""
    _, _, log, stale, live = printing_run
    assert not stale.exists()
    assert live.exists()
    pids = log.read_text().split()
    left = [p.name for pid in pids for p in Path(tempfile.gettempdir()).glob(f"paretotune-ptxas-{pid}-*")]
    assert left == []
