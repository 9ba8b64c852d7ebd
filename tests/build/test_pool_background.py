"""The CPU pool keeps its workers busy: all of them are spawned up front, and :func:`in_background` drains the
pool in a thread, so a slow consumer (the GPU measurement) never holds back the next compile."""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from paretotune.build.pool import WorkerPool, in_background
from paretotune.records import Candidate, TrialRecord

_DIR: dict[str, str] = {}


def note_pid(folder: str) -> None:
    """Worker initializer: leave a file named by the worker's pid."""
    _DIR["folder"] = folder
    Path(folder, str(os.getpid())).touch()


def slow_job(candidate: Candidate) -> TrialRecord:
    time.sleep(0.3)
    return TrialRecord(candidate_id=candidate.candidate_id, generation=0, config={}, acf=None, is_baseline=False,
                       status="ok", extra={"pid": os.getpid()})


def candidates(n: int) -> list[Candidate]:
    return [Candidate(candidate_id=i, generation=0, config={}, acf=None) for i in range(n)]


def test_producer_runs_ahead_of_a_slow_consumer() -> None:
    finished = threading.Event()

    def produce() -> Iterator[int]:
        yield from range(5)
        finished.set()

    got = []
    for item in in_background(produce()):
        if not got:  # a synchronous generator could not have finished while the consumer holds its first item
            assert finished.wait(10), "the producer waited for the consumer"
        got.append(item)
    assert got == [0, 1, 2, 3, 4]


def test_producer_error_reaches_the_consumer_after_its_items() -> None:
    def produce() -> Iterator[int]:
        yield 1
        raise ValueError("broken pool")

    got: list[int] = []
    with pytest.raises(ValueError, match="broken pool"):
        got.extend(in_background(produce()))
    assert got == [1]


def test_consumer_that_stops_early_closes_the_producer() -> None:
    closed = threading.Event()

    def produce() -> Iterator[int]:
        try:
            yield from range(1000)
        finally:
            closed.set()

    stream = in_background(produce())
    assert next(stream) == 0
    stream.close()
    assert closed.wait(10)


def test_start_spawns_every_worker_before_any_task(tmp_path: Path) -> None:
    pool = WorkerPool(slow_job, note_pid, (str(tmp_path),), 3, 60.0)
    try:
        pool.start()
        deadline = time.monotonic() + 120
        while len(list(tmp_path.iterdir())) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        started = {int(p.name) for p in tmp_path.iterdir()}
        assert len(started) == 3
        records = list(pool.run(candidates(6)))
        assert sorted(r.candidate_id for r in records) == list(range(6))
        assert {r.extra["pid"] for r in records} <= started  # no worker was spawned late
    finally:
        pool.close()


def test_closing_the_pool_ends_a_run_in_another_thread(tmp_path: Path) -> None:
    pool = WorkerPool(slow_job, note_pid, (str(tmp_path),), 1, 60.0)
    got = []
    closed_at = float("inf")
    try:
        for rec in in_background(pool.run(candidates(50))):
            got.append(rec)
            if len(got) == 1:
                pool.close()  # what the evaluator does when the campaign stops
                closed_at = time.monotonic()
    finally:
        pool.close()
    assert 1 <= len(got) < 50
    assert time.monotonic() - closed_at < 30  # noticed at once, not at the 60 s task deadline
    with pytest.raises(RuntimeError, match="closed"):
        list(pool.run(candidates(1)))


def sleepy_job(candidate: Candidate) -> TrialRecord:
    """Candidate 0 builds for a minute, the others at once."""
    time.sleep(60 if candidate.candidate_id == 0 else 0.05)
    return TrialRecord(candidate_id=candidate.candidate_id, generation=0, config={}, acf=None, is_baseline=False,
                       status="ok")


def test_a_build_running_past_the_wall_clock_is_cut_and_none_starts_after_it(tmp_path: Path) -> None:
    """``cut_at`` (the campaign's wall clock): the minute-long build is recorded as cut well before its own
    120 s limit; a candidate put after the cut is not started but recorded as cut too."""
    from paretotune.build.base import Feed
    from paretotune.build.pool import CUT_AT_WALL_CLOCK

    pool = WorkerPool(sleepy_job, note_pid, (str(tmp_path),), 2, 120.0)
    feed = Feed(candidates(3))
    try:
        pool.start()
        pool.cut_at = time.monotonic() + 20  # after the workers' start-up; long before candidate 0 ends
        got: dict[int, TrialRecord] = {}
        for rec in pool.run(feed):
            got[rec.candidate_id] = rec
            if rec.candidate_id == 0:
                feed.put([Candidate(candidate_id=3, generation=0, config={}, acf=None)])
                feed.close()
    finally:
        pool.close()
    assert got[1].status == got[2].status == "ok"
    assert got[0].status == "failed" and got[0].error == CUT_AT_WALL_CLOCK
    assert got[3].status == "failed" and got[3].error == CUT_AT_WALL_CLOCK
    # `paretotune run` counts them apart from the candidates' own failures
    from dataclasses import replace

    from paretotune.measure.gpu import CUT_MEASUREMENT
    from paretotune.runner.session import evaluated_line

    broken = replace(got[1], status="failed", error="s: wrong answer: 3 of 4096 elements off")
    stuck = replace(got[2], status="failed", error=CUT_MEASUREMENT + " (s: timing)")
    assert evaluated_line([got[0], broken, stuck, got[3]]) == (
        "4 candidates evaluated (4 failed, 3 of them cut at the wall clock)")
    assert evaluated_line([got[1], broken]) == "2 candidates evaluated (1 failed)"


def crash_on_first(candidate: Candidate) -> TrialRecord:
    """Candidate 0 kills its worker (as a ptxas that takes the worker down does); the others build."""
    if candidate.candidate_id == 0:
        os._exit(9)
    return TrialRecord(candidate.candidate_id, candidate.generation, candidate.config, None, False, "ok")


@pytest.mark.parametrize("refusal", [OSError("handle is closed"), "broken"])
def test_a_pool_that_broke_before_a_submit_runs_the_candidate_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    refusal: object) -> None:
    """A submit refused because a worker died since the loop last looked (BrokenProcessPool; on CPython 3.11 a
    race with the executor's manager thread gives ``OSError: handle is closed``) is a task the crash broke: run
    again alone, never an error out of the pool (it once ended a campaign as 'internal error')."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    real = ProcessPoolExecutor.submit
    refused: list[int] = []

    def submit(self: ProcessPoolExecutor, fn: object, *args: object, **kwargs: object) -> object:
        cand = args[0] if args else None
        if isinstance(cand, Candidate) and cand.candidate_id == 2 and not refused:
            refused.append(2)
            raise refusal if isinstance(refusal, OSError) else BrokenProcessPool("a worker died")
        return real(self, fn, *args, **kwargs)

    monkeypatch.setattr(ProcessPoolExecutor, "submit", submit)
    pool = WorkerPool(crash_on_first, note_pid, (str(tmp_path),), 2, 60.0)
    try:
        records = {r.candidate_id: r for r in pool.run(candidates(4))}
    finally:
        pool.close()
    assert refused == [2] and sorted(records) == [0, 1, 2, 3]
    assert records[0].status == "failed" and "worker process crashed" in records[0].error
    assert all(records[i].status == "ok" for i in (1, 2, 3))
