"""SIGKILL a static campaign that the helion engine searches (engine: auto over Helion's ConfigSpec, two
islands, real ACFs), resume it, and check the finished run: every evaluation stored once, no point twice,
nothing pending, and the engine's results equal to the store point by point (nothing told that is not stored,
nothing stored that was not told).

Real compiles and ptxas in the CLI's worker processes: only the campaign process is killed, as the OOM killer
would. The candidate-by-candidate equality with an uninterrupted run is checked with deterministic fakes in
tests/runner/test_resume_helion.py (here, a compile timeout on a busy machine would change the search).
"""
from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from paretotune.store import RunDir
from reliability.conftest import ROOT, cli, cli_env, group_members, run_cli
from reliability.test_kill_resume import _progress, _wait_for_orphans
from runner.invariants import check_front, check_helion_ledger, check_records

FIXTURES = ROOT / "tests" / "fixtures" / "helion_aot"
ACFS = sorted((ROOT / "benchmarks" / "inputs" / "ttq_acfs").glob("*.acf"))[:2]  # real sm_90 ACFs
GENERATIONS, POOL = 1, 7
BUDGET = GENERATIONS * POOL


def campaign(folder: Path) -> Path:
    for acf in ACFS:
        shutil.copy(acf, folder / acf.name)
    path = folder / "campaign.yaml"
    path.write_text(f"""\
name: kill-resume-helion
kernel:
  source: {FIXTURES}/scale_rows.py:scale_rows
  inputs: {FIXTURES}/scale_rows.py:inputs
shapes:
  - {{name: wide, M: 512, N: 4096}}
objectives: [registers, spill_bytes]
acf:
  files: [{", ".join(a.name for a in ACFS)}]
search: {{generations: {GENERATIONS}, pool_size: {POOL}}}
evaluation: {{workers: 2, compile_timeout_s: 120}}
seed: 5
""")
    return path


@pytest.mark.slow
def test_sigkill_mid_search_then_resume(tmp_path: Path) -> None:
    run = tmp_path / "run"
    env = cli_env()
    proc = subprocess.Popen(cli("run", str(campaign(tmp_path)), "--out", str(run), "--quiet"), env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        lines, _, pending, stored = _progress(run)
        if len(stored) >= 3 and pending - stored:  # mid-search: some stored, a batch still in flight
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close() if proc.stderr else None
    assert _wait_for_orphans(proc.pid), f"workers left behind: {group_members(proc.pid)}"

    done = run_cli("resume", str(run), "--quiet", env=env, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    records = check_records(run, BUDGET)
    assert check_helion_ledger(run, records) >= BUDGET - 1  # (at most one point told twice as a repeat: none here)
    check_front(run)
    assert "Helion's LFBOTreeSearch" in " ".join(RunDir(run).meta()["kernel"]["notes"])
    again = run_cli("resume", str(run), "--quiet", env=env)
    assert again.returncode == 0 and "nothing to resume" in again.stdout, again.stderr
