"""The steady schedule (candidates in flight across generations, each told as it comes) keeps the resume
promise of the generational one: after a crash at any record, nothing is lost and nothing evaluated twice.

Same fakes as tests/campaign/test_resume.py (real loop, store, checkpoints, CompileIQ; no compiles), with an
evaluator that takes a Feed, so the loop runs its steady schedule.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from paretotune.campaign.load import load_campaign
from paretotune.records import TrialRecord
from paretotune.runner.resume import resume_point
from paretotune.store import RunDir
from paretotune.store.checkpoint import Checkpointer, read_checkpoint
from runner.conftest import Crash, FakeEvaluator, write_campaign
from runner.invariants import check_engine_ledger, check_front, check_records
from runner.test_resume import SPACE, assert_complete, crash_after, crashed_twice_equals_uninterrupted, resume, start


def stored_ids(out: Path) -> set[int]:
    return {r.candidate_id for r in RunDir(out).records()}


def assert_resumed(out: Path, budget: int, stored_at_crashes: set[int]) -> list[TrialRecord]:
    """The invariants of a complete run, and no stored candidate evaluated again. (The evaluator works ahead
    of the loop in its own thread, as a real pool does: what it had finished but the loop had not stored when
    the run was killed is lost with the process and evaluated again; a stored record never is.)"""
    records = check_records(out, budget)
    check_engine_ledger(out, records, SPACE)
    check_front(out)
    again = {i for i, n in FakeEvaluator.evaluations.items() if n != 1}
    assert not again & stored_at_crashes, f"stored candidates evaluated again: {sorted(again & stored_at_crashes)}"
    return records


def test_uninterrupted_run_overlaps_generations(tmp_path: Path, feed_fake_evaluator: Any, ptxas: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine is asked again while earlier candidates are in flight, never with more than in_flight + one
    batch outstanding; the run meets the same invariants as a generational one."""
    in_flight: list[int] = []
    real = Checkpointer.commit

    def commit(self: Checkpointer, engine: Any, **kw: Any) -> Any:
        in_flight.append(len(kw["pending"]))
        return real(self, engine, **kw)

    monkeypatch.setattr(Checkpointer, "commit", commit)
    start(write_campaign(tmp_path), tmp_path / "run", ptxas)
    assert_complete(tmp_path / "run", 27)
    assert max(in_flight) > 9  # a second batch was issued before the first was all told (pool_size 9)
    assert max(in_flight) <= 9 + 8  # asked only when fewer than in_flight (default: pool_size) were out
    timing = RunDir(tmp_path / "run").meta()["timing"]
    stored = RunDir(tmp_path / "run").records()
    assert [t["schedule"] for t in timing] == ["steady"] and timing[0]["candidates"] == len(stored) - 1  # twins too


def test_barrier_keeps_the_generational_schedule(tmp_path: Path, feed_fake_evaluator: Any, ptxas: Any) -> None:
    path = write_campaign(tmp_path)
    path.write_text(path.read_text().replace("  pool_size: 9\n", "  pool_size: 9\n  barrier: true\n"))
    assert load_campaign(path).spec.search.barrier
    start(path, tmp_path / "run", ptxas)
    assert_complete(tmp_path / "run", 27)
    assert RunDir(tmp_path / "run").meta()["timing"][0]["schedule"] == "generational"


@pytest.mark.parametrize("n", [2, 5, 12, 20, 26])  # record 1 is the baseline
def test_crash_at_any_record(tmp_path: Path, feed_fake_evaluator: Any, ptxas: Any, n: int) -> None:
    out = tmp_path / "run"
    with pytest.raises(Crash):
        start(write_campaign(tmp_path), out, ptxas, on_record=crash_after(n))
    point = resume_point(RunDir(out))
    assert point.in_flight is not None  # a crash mid-run leaves candidates in flight, across asks
    stored = stored_ids(out)
    assert len(stored) == n
    resume(out, ptxas)
    assert_resumed(out, 27, stored)


def test_crash_between_append_and_tell(tmp_path: Path, feed_fake_evaluator: Any, ptxas: Any,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A record is stored but the told commit after it never happens: resume tells it from the store (with any
    stored after it that waited to be told in issue order, as a static campaign's are)."""
    out = tmp_path / "run"
    real = Checkpointer.commit
    told = []

    def commit(self: Checkpointer, engine: Any, **kw: Any) -> Any:
        if kw["evaluated"] == 11:
            told.append(kw)
            raise Crash("before the told commit of the 11th record")
        return real(self, engine, **kw)

    monkeypatch.setattr(Checkpointer, "commit", commit)
    with pytest.raises(Crash):
        start(write_campaign(tmp_path), out, ptxas)
    monkeypatch.setattr(Checkpointer, "commit", real)
    point = resume_point(RunDir(out))
    assert point.in_flight is not None and point.in_flight.tell and len(point.in_flight.stored) >= 1
    stored = stored_ids(out)
    assert len(stored) == 1 + 10 + len(point.in_flight.stored)  # the baseline, 10 told and committed, the rest
    resume(out, ptxas)
    assert_resumed(out, 27, stored)


def test_many_crashes_in_a_row(tmp_path: Path, feed_fake_evaluator: Any, ptxas: Any) -> None:
    """Each resume evaluates only candidates the store did not hold when it started."""
    out = tmp_path / "run"
    with pytest.raises(Crash):
        start(write_campaign(tmp_path), out, ptxas, on_record=crash_after(2))
    for n in (3, 1, 5, 2, 7, None):
        stored, before = stored_ids(out), Counter(FakeEvaluator.evaluations)
        if n is None:
            resume(out, ptxas)
        else:
            with pytest.raises(Crash):
                resume(out, ptxas, on_record=crash_after(n))
            assert len(stored_ids(out)) == len(stored) + n
        again = set(FakeEvaluator.evaluations - before) & stored
        assert not again, f"stored candidates evaluated again: {sorted(again)}"
    assert_resumed(out, 27, set())
    assert len(RunDir(out).meta()["timing"]) == 1  # only a call that ends well records its timing


def test_seeded_engine_resumes_to_the_uninterrupted_result(tmp_path: Path, feed_fake_evaluator: Any,
                                                           ptxas: Any) -> None:
    """Random search, seeded: a crashed-and-resumed steady run stores exactly what an uninterrupted one does."""
    run = crashed_twice_equals_uninterrupted(tmp_path, ptxas)
    assert read_checkpoint(run).pending == ()
    assert SPACE  # the same knob space as the generational tests


class SteppingClock:
    """``time`` for the loop's modules only: each ``monotonic()`` reads one second later (no real waiting)."""

    def __init__(self) -> None:
        import time

        self.now, self._time = 0.0, time

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now

    def __getattr__(self, name: str) -> Any:
        return getattr(self._time, name)


def test_wall_clock_budget_stops_proposing_and_finishes_in_flight(tmp_path: Path, feed_fake_evaluator: Any,
                                                                  ptxas: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from paretotune.runner import ledger, loop

    path = write_campaign(tmp_path)
    path.write_text(path.read_text().replace("  pool_size: 9\n", "  pool_size: 9\n  wall_clock_s: 20\n"))
    clock = SteppingClock()
    monkeypatch.setattr(loop, "time", clock)
    monkeypatch.setattr(ledger, "time", clock)  # the run's elapsed time, read before each proposal
    start(path, tmp_path / "run", ptxas)
    run = RunDir(tmp_path / "run")
    records = run.records()
    cp = read_checkpoint(tmp_path / "run")
    assert cp is not None and cp.pending == ()  # everything proposed was evaluated and told
    search = [r for r in records if not r.is_baseline and "twin_of" not in r.extra]  # twins come after the search
    assert 9 <= len(search) < 27  # stopped proposing before the evaluation budget
    assert sorted(r.candidate_id for r in records) == list(range(cp.evaluated + 1))
    assert clock.now > 20 and run.meta()["timing"][0]["candidates"] == cp.evaluated


@pytest.mark.parametrize("wall_clock", [None, 1000])
def test_the_loop_paces_a_sequential_search_by_its_wall_clock(tmp_path: Path, feed_fake_evaluator: Any, ptxas: Any,
                                                              wall_clock: int | None,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a wall-clock budget the loop gives the sequential engine the run's clock, so its config phase
    ends at half the time left (tests/search/test_engines.py), and tells the evaluator when builds must stop
    (the wall clock and its grace; lifted for the twins); without one, neither happens."""
    import json
    import time

    cuts: list[float | None] = []
    monkeypatch.setattr(feed_fake_evaluator, "stop_work_at", lambda self, t: cuts.append(t), raising=False)
    path = write_campaign(tmp_path)
    extra = "  strategy: sequential\n" + (f"  wall_clock_s: {wall_clock}\n" if wall_clock else "")
    path.write_text(path.read_text().replace("  pool_size: 9\n", "  pool_size: 9\n" + extra))
    began = time.monotonic()
    start(path, tmp_path / "run", ptxas)
    cp = read_checkpoint(tmp_path / "run")
    assert cp is not None and cp.engine_file
    phases = json.loads((tmp_path / "run" / f"{cp.engine_file}.phase.json").read_text())
    if wall_clock is None:
        assert phases["phase1_until_s"] is None and cuts == []
    else:
        assert 0 < phases["phase1_until_s"] < wall_clock
        assert len(cuts) == 2 and cuts[1] is None  # set for the search, lifted for the twins
        assert began + wall_clock + 50 <= cuts[0] <= time.monotonic() + wall_clock + 50  # 5 % grace of 1000 s


def sequential_campaign(folder: Path) -> Path:
    path = write_campaign(folder)
    path.write_text(path.read_text().replace("  pool_size: 9\n", "  pool_size: 9\n  strategy: sequential\n"))
    return path


def test_sequential_runs_steady_from_the_baseline_config(tmp_path: Path, feed_fake_evaluator: Any,
                                                         ptxas: Any) -> None:
    """A sequential search keeps candidates in flight too (no generation barrier), its config phase counts the
    baseline as a result, and its ACF phase runs at the knee of the baseline and every config it tried."""
    import json

    from paretotune.search.sequential import knee_config

    start(sequential_campaign(tmp_path), tmp_path / "run", ptxas)
    run = RunDir(tmp_path / "run")
    records = check_records(tmp_path / "run", 27)
    assert [t["schedule"] for t in run.meta()["timing"]] == ["steady"]
    search = [r for r in records if "twin_of" not in r.extra]
    phase1 = [r for r in search if r.acf is None]  # the baseline, then half the budget of configs
    n = len(phase1)
    assert n == 1 + 27 // 2 and search[:n] == phase1 and all(r.acf is not None for r in search[n:])
    cp = read_checkpoint(tmp_path / "run")
    assert cp is not None
    state = json.loads((tmp_path / "run" / f"{cp.engine_file}.phase.json").read_text())
    assert state["results"][0][0] == records[0].config  # the baseline came first
    vector = {"spill_bytes": 1, "registers": 1, "theoretical_occupancy": -1}
    knee = knee_config([(r.config, tuple(s * r.values[k] for k, s in vector.items()))
                        for r in phase1 if r.status == "ok"])
    assert {json.dumps(r.config, sort_keys=True) for r in search[n:]} == {json.dumps(knee, sort_keys=True)}


@pytest.mark.parametrize("n", [3, 12])  # record 1 is the baseline: a crash in the config phase, in the ACF phase
def test_sequential_steady_crash_and_resume(tmp_path: Path, feed_fake_evaluator: Any, ptxas: Any, n: int) -> None:
    out = tmp_path / "run"
    with pytest.raises(Crash):
        start(sequential_campaign(tmp_path), out, ptxas, on_record=crash_after(n))
    stored = stored_ids(out)
    resume(out, ptxas)
    check_records(out, 27)
    again = {i for i, k in FakeEvaluator.evaluations.items() if k != 1}
    assert not again & stored
