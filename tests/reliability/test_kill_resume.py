"""SIGKILL a running CPU quickstart campaign at 20 random moments, resume after each, and check that the
finished run holds every evaluation exactly once.

The check is adapted, not "the same front as an uninterrupted run with the same seed" (that one is
tests/test_quickstart.py's, without kills; here ACF bytes would differ anyway: CompileIQ encrypts each sample
with a fresh nonce). campaign/invariants.py checks what fails on loss or
duplication instead: ids 0..budget each stored once, no (config, ACF) point twice, nothing pending, CompileIQ's
own result ledger equal to the store point by point (nothing told that is not stored, nothing stored that
was not told), and a front equal to the brute-force non-dominated set of the stored records. The strong,
same-result check is made with a seeded engine in tests/campaign/test_resume.py.

Kill moments (seeded RNG, every kill's draws made up front) mix three kinds: a random delay after launch
(often during start-up), a random delay after the run's next visible step (a stored record or a commit), and the
instant the last record of a generation is stored (the window between append and tell that resume must handle
by telling stored records rather than evaluating them again; under the steady schedule, whose generations
overlap, the instant any in-flight candidate is stored). A kill comes at the latest after a few new records,
and once the budget left gets short, with the first one, so that the run cannot finish before the 20th kill.
The test counts events, not seconds: it makes exactly 20 kills however slow the machine (a loaded machine once
fitted only 13 into a fixed 220 s), and waits for a launch's next event as long as the launch makes progress; a
launch with no new record or commit for :data:`STALL_S` is a hung campaign and fails the test. A kill at a
generation's end lets at most a generation and a few records through if its window is missed. The whole
process group is not killed, only the campaign process, as the OOM killer would: its workers must notice and
exit by themselves.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from paretotune.errors import UserError
from paretotune.runner.resume import resume_point
from paretotune.store import RunDir
from reliability.conftest import ROOT, cli, cli_env, group_members, run_cli, small_quickstart
from runner.invariants import check_engine_ledger, check_front, check_records

KILLS = 20
GENERATIONS, POOL = 8, 9  # budget 72: room for 20 kills that each let a few records through
BUDGET = GENERATIONS * POOL
STALL_S = 600.0  # no new record or commit for this long after a launch: the campaign hangs (start-up is far shorter)
SPACE = {"num_warps": [4, 8, 16, 32], "num_stages": [1]}


def _progress(run: Path) -> tuple[int, int, frozenset[int], frozenset[int]]:
    """(stored lines, checkpoint seq, pending ids, stored ids), read without locks (writers are atomic)."""
    try:
        data = (run / "results.jsonl").read_bytes()
    except FileNotFoundError:
        data = b""
    stored = frozenset(json.loads(line)["candidate_id"] for line in data.split(b"\n") if line.endswith(b"}"))
    try:
        cp = json.loads((run / "checkpoint.json").read_text())
        seq, pending = cp["seq"], frozenset(c["candidate_id"] for c in cp["pending"])
    except (FileNotFoundError, ValueError):
        seq, pending = 0, frozenset()
    return data.count(b"\n"), seq, pending, stored


def _kill_at(proc: subprocess.Popen[bytes], run: Path, rng: random.Random, *, gentle: bool) -> str | None:
    """Wait for a randomly chosen moment and SIGKILL the campaign process; None if it finished first.

    ``gentle`` kills come at the latest with the first new record, so the run cannot finish before the last
    kill however fast the machine is. The same draws are made for every kill, whatever happens, so the kinds
    and bounds of the kills are the same on every machine.
    """
    drawn_kind = rng.choices(["time", "step", "generation-end"], weights=[3, 5, 2])[0]
    drawn_cap = rng.randint(2, 5)
    delay = rng.uniform(0.3, 3.0) if gentle else rng.uniform(0.3, 12.0)
    after_step = rng.uniform(0.0, 0.8)
    kind, cap = ("time", 1) if gentle else (drawn_kind, drawn_cap)  # at most cap new records (POOL more at a
    # generation's end)
    start = time.monotonic()
    first = last = _progress(run)
    last_change = start
    while proc.poll() is None:
        now = _progress(run)
        if now[:2] != last[:2]:
            last, last_change = now, time.monotonic()
        if len(now[3] - first[3]) >= (cap if kind != "generation-end" else POOL + cap):
            break  # the bound on new records per kill (at a generation's end, whose window may be missed: POOL more)
        if kind == "time" and time.monotonic() >= start + delay:
            break
        if kind == "step" and now[:2] != first[:2]:
            time.sleep(after_step)
            break
        if kind == "generation-end" and now[2] and (now[2] <= now[3] or now[2] & (now[3] - first[3])):
            # every in-flight candidate is stored: tell and commit are under way; under the steady schedule
            # generations overlap and never all end at once: there, a candidate stored while the last commit
            # still holds it in flight (the same window between append and tell)
            break
        if time.monotonic() - last_change > STALL_S:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            raise AssertionError(f"the campaign made no progress in {STALL_S:.0f} s (waiting for a {kind} kill)")
        time.sleep(0.005)
    if proc.poll() is not None:
        return None
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return kind


def _wait_for_orphans(pgid: int, limit_s: float = 20.0) -> bool:
    """True when every process of the group exited by itself; else kill them (and return False)."""
    deadline = time.monotonic() + limit_s
    while group_members(pgid):
        if time.monotonic() > deadline:
            os.killpg(pgid, signal.SIGKILL)
            return False
        time.sleep(0.1)
    return True


def _state(run: Path) -> str:
    """What the kill interrupted, as resume sees it."""
    try:
        point = resume_point(RunDir(run))
    except UserError as exc:  # an inconsistent store is a failure of the crash safety under test
        raise AssertionError(f"run not resumable after a kill: {exc}") from None
    if point.checkpoint is None:
        return "before-first-generation"
    if point.in_flight is None:
        return "between-generations"
    stored, total = len(point.in_flight.stored), len(point.in_flight.candidates)
    return "generation-stored-not-told" if stored == total else ("mid-generation" if stored else "issued")


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_and_repeats_nothing(tmp_path: Path) -> None:
    campaign = small_quickstart(tmp_path, generations=GENERATIONS, pool_size=POOL, workers=2)
    run = tmp_path / "run"
    rng = random.Random(20261129)
    env = cli_env()
    kinds: Counter[str] = Counter()
    states: Counter[str] = Counter()
    orphans = 0
    started = time.monotonic()
    launches = [cli("run", str(campaign), "--resume", "--out", str(run), "--quiet"),
                cli("resume", str(run), "--quiet")]
    while sum(kinds.values()) < KILLS:  # by events: each pass ends in one kill (or fails the test)
        stored = len(_progress(run)[3])
        # alternate the two ways to continue; only 'run --resume' can start a run that has no run.json yet
        cmd = launches[sum(kinds.values()) % 2 if (run / "run.json").exists() else 0]
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        left, kills_left = BUDGET + 1 - stored, KILLS - sum(kinds.values())
        kind = _kill_at(proc, run, rng, gentle=left < 2 * kills_left + POOL + 10)
        assert kind is not None, (f"the campaign exited ({proc.returncode}) before kill {sum(kinds.values()) + 1}: "
                                  f"{proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
        proc.stderr.close() if proc.stderr else None
        orphans += not _wait_for_orphans(proc.pid)
        kinds[kind] += 1
        if run.exists() and (run / "run.json").exists():
            states[_state(run)] += 1
    print(f"\nkills: {dict(kinds)}; interrupted states: {dict(states)}; "
          f"kill phase {time.monotonic() - started:.0f} s; {len(_progress(run)[3])} stored before the last resume")
    assert sum(kinds.values()) == KILLS
    assert orphans == 0, f"{orphans} kills left worker processes behind"

    proc = run_cli("resume", str(run), "--quiet", env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = check_records(run, BUDGET)
    ledger_rows = check_engine_ledger(run, records, SPACE)
    assert ledger_rows >= BUDGET
    check_front(run)
    again = run_cli("resume", str(run), "--quiet", env=env)
    assert again.returncode == 0 and "nothing to resume" in again.stdout, again.stderr
    assert len(RunDir(run).records()) == len(records)  # the budget, the baseline and the twins: none added
