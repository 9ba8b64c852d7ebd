"""Resume after a crash at each commit point of the loop: nothing lost, nothing evaluated twice.

The loop, store, checkpoints and CompileIQ engine are real; the evaluator is fake (no compiles), so each test
can stop the loop at an exact point (:class:`Crash` stands in for SIGKILL) and count evaluations per
candidate. The SIGKILL test with real compiles is tests/reliability/test_kill_resume.py.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from paretotune.campaign.load import load_campaign
from paretotune.errors import UserError
from paretotune.records import TrialRecord
from paretotune.runner.loop import run_campaign
from paretotune.runner.resume import open_run, prepare_resume, resume_point
from paretotune.runner.start import start_run
from paretotune.store import RunDir
from paretotune.store.checkpoint import Checkpointer, read_checkpoint
from runner.conftest import Crash, FakeEvaluator, write_campaign
from runner.invariants import check_engine_ledger, check_front, check_records

SPACE = {"num_warps": [4, 8, 16, 32], "num_stages": [1, 2, 3, 4]}


def start(campaign: Path, out: Path, ptxas: Any, **kw: Any) -> list[TrialRecord]:
    c = load_campaign(campaign)
    return run_campaign(c, start_run(c, out, ptxas, c.spec.seed), ptxas, **kw)


def resume(out: Path, ptxas: Any, **kw: Any) -> list[TrialRecord]:
    run = open_run(out)
    plan = prepare_resume(run, ptxas)
    if plan.complete:
        return []
    return run_campaign(plan.campaign, run, ptxas, engine=plan.engine, state=plan.point.state,
                        in_flight=plan.point.in_flight, **kw)


def crash_after(n: int) -> Any:
    seen = []

    def on_record(rec: TrialRecord) -> None:
        seen.append(rec)
        if len(seen) == n:
            raise Crash(f"after record {n}")

    return on_record


def assert_complete(out: Path, budget: int, *, ledger: bool = True) -> list[TrialRecord]:
    records = check_records(out, budget)
    if ledger:
        check_engine_ledger(out, records, SPACE)
    check_front(out)
    over = {i: n for i, n in FakeEvaluator.evaluations.items() if n != 1}
    assert not over, f"candidates evaluated more than once: {over}"
    return records


def test_uninterrupted_run_satisfies_the_invariants(tmp_path: Path, fake_evaluator: Any, ptxas: Any) -> None:
    start(write_campaign(tmp_path), tmp_path / "run", ptxas)
    assert_complete(tmp_path / "run", 27)
    assert sorted((tmp_path / "run").glob("engine-*")) == sorted(
        [tmp_path / "run" / f"engine-{read_checkpoint(tmp_path / 'run').seq:06d}.ckpt",
         tmp_path / "run" / f"engine-{read_checkpoint(tmp_path / 'run').seq:06d}.ckpt.dedupe.json"])


@pytest.mark.parametrize("n", [1, 4, 12, 20])
def test_crash_mid_generation(tmp_path: Path, fake_evaluator: Any, ptxas: Any, n: int) -> None:
    """Records 1..n are stored, the rest of the generation is in flight: those are evaluated, the stored not."""
    out = tmp_path / "run"
    with pytest.raises(Crash):
        start(write_campaign(tmp_path), out, ptxas, on_record=crash_after(n))
    point = resume_point(RunDir(out))
    if point.in_flight is not None:
        assert set(point.in_flight.stored) <= {c.candidate_id for c in point.in_flight.candidates}
    resume(out, ptxas)
    assert_complete(out, 27)


def test_crash_between_append_and_tell(tmp_path: Path, fake_evaluator: Any, ptxas: Any,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole generation is stored but not told: resume tells it from the store and evaluates nothing."""
    out = tmp_path / "run"
    real = Checkpointer.commit
    commits: list[int] = []

    def commit(self: Checkpointer, engine: Any, **kw: Any) -> Any:
        if kw["pending"] == () and kw["generation"] == 2:
            raise Crash("before the told commit of generation 2")
        commits.append(kw["generation"])
        return real(self, engine, **kw)

    monkeypatch.setattr(Checkpointer, "commit", commit)
    with pytest.raises(Crash):
        start(write_campaign(tmp_path), out, ptxas)
    monkeypatch.setattr(Checkpointer, "commit", real)
    point = resume_point(RunDir(out))
    assert point.in_flight is not None and point.in_flight.tell
    assert set(point.in_flight.stored) == {c.candidate_id for c in point.in_flight.candidates}
    before = dict(FakeEvaluator.evaluations)
    resume(out, ptxas)
    assert all(FakeEvaluator.evaluations[i] == 1 for i in point.in_flight.stored)
    twins = sum("twin_of" in r.extra for r in RunDir(out).records())  # measured after the search, for attribution
    assert sum(FakeEvaluator.evaluations.values()) - sum(before.values()) == \
        27 - 9 - len(point.in_flight.stored) + twins
    assert_complete(out, 27)


def test_crash_after_engine_save_before_commit(tmp_path: Path, fake_evaluator: Any, ptxas: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine wrote its new checkpoint but checkpoint.json still names the old one: the old pair wins,
    the half-written generation was never evaluated, and its ids are given again."""
    out = tmp_path / "run"
    real = Checkpointer.commit

    def commit(self: Checkpointer, engine: Any, **kw: Any) -> Any:
        if kw["pending"] and kw["generation"] == 2:
            seq = (self.last.seq if self.last else 0) + 1
            engine.save(str(self.run / f"engine-{seq:06d}.ckpt"))
            raise Crash("after the engine save of generation 2's issued commit")
        return real(self, engine, **kw)

    monkeypatch.setattr(Checkpointer, "commit", commit)
    with pytest.raises(Crash):
        start(write_campaign(tmp_path), out, ptxas)
    monkeypatch.setattr(Checkpointer, "commit", real)
    cp = read_checkpoint(out)
    assert cp is not None and cp.pending == () and cp.next_id == 10
    assert (out / f"engine-{cp.seq + 1:06d}.ckpt").exists()  # the orphan
    resume(out, ptxas)
    assert_complete(out, 27)
    assert not (out / f"engine-{cp.seq + 1:06d}.ckpt").exists() or read_checkpoint(out).seq == cp.seq + 1


def test_crash_before_the_first_commit(tmp_path: Path, fake_evaluator: Any, ptxas: Any) -> None:
    """Only the baseline is stored and there is no checkpoint: resume keeps it and starts the engine."""
    out = tmp_path / "run"
    with pytest.raises(Crash):
        start(write_campaign(tmp_path), out, ptxas, on_record=crash_after(1))
    assert read_checkpoint(out) is None and len(RunDir(out).records()) == 1
    resume(out, ptxas)
    assert_complete(out, 27)


def test_many_crashes_in_a_row(tmp_path: Path, fake_evaluator: Any, ptxas: Any) -> None:
    out = tmp_path / "run"
    with pytest.raises(Crash):
        start(write_campaign(tmp_path), out, ptxas, on_record=crash_after(2))
    for n in (3, 1, 5, 2, 7):
        with pytest.raises(Crash):
            resume(out, ptxas, on_record=crash_after(n))
    resume(out, ptxas)
    assert_complete(out, 27)
    assert resume(out, ptxas) == []  # complete: nothing to do


def crashed_twice_equals_uninterrupted(tmp_path: Path, ptxas: Any) -> Path:
    """Seeded random search run once uninterrupted (a/) and once crashed twice and resumed (b/): both store the
    same candidates with the same values and the same front. Returns b's run folder."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    kw: dict[str, Any] = {"engine": "random", "acf": "none", "generations": 2, "pool_size": 6}
    start(write_campaign(tmp_path / "a", **kw), tmp_path / "a" / "run", ptxas)
    FakeEvaluator.evaluations.clear()
    with pytest.raises(Crash):
        start(write_campaign(tmp_path / "b", **kw), tmp_path / "b" / "run", ptxas, on_record=crash_after(4))
    with pytest.raises(Crash):
        resume(tmp_path / "b" / "run", ptxas, on_record=crash_after(5))
    resume(tmp_path / "b" / "run", ptxas)

    def table(run: Path) -> list[tuple[int, str, str]]:
        return sorted((r.candidate_id, json.dumps(r.config, sort_keys=True), json.dumps(r.values, sort_keys=True))
                      for r in check_records(run, 12))

    assert table(tmp_path / "a" / "run") == table(tmp_path / "b" / "run")
    assert check_front(tmp_path / "a" / "run") == check_front(tmp_path / "b" / "run")
    return tmp_path / "b" / "run"


def test_seeded_engine_resumes_to_the_uninterrupted_result(tmp_path: Path, fake_evaluator: Any, ptxas: Any) -> None:
    """With a deterministic engine (random, seeded, no generated ACFs) a crashed-and-resumed run proposes and
    stores exactly what an uninterrupted run does: the strong form of the check CompileIQ cannot support."""
    crashed_twice_equals_uninterrupted(tmp_path, ptxas)


def test_engine_without_restore_starts_afresh(tmp_path: Path, fake_evaluator: Any, ptxas: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """In-flight candidates are still evaluated and stored once; they are not told (the engine never asked)."""
    from paretotune.search.dedupe import Deduplicated

    out = tmp_path / "run"
    with pytest.raises(Crash):
        start(write_campaign(tmp_path), out, ptxas, on_record=crash_after(13))

    def no_restore(self: Deduplicated, path: str) -> None:
        raise NotImplementedError("test: this engine cannot restore")

    monkeypatch.setattr(Deduplicated, "restore", no_restore)
    plan = prepare_resume(open_run(out), ptxas)
    assert plan.point.in_flight is not None and not plan.point.in_flight.tell
    resume(out, ptxas)
    records = check_records(out, 27)
    check_front(out)
    assert all(n == 1 for n in FakeEvaluator.evaluations.values())
    assert len([r for r in records if "twin_of" not in r.extra]) == 28  # twins: checked by check_records


def test_edited_results_are_refused(tmp_path: Path, fake_evaluator: Any, ptxas: Any) -> None:
    out = tmp_path / "run"
    with pytest.raises(Crash):
        start(write_campaign(tmp_path), out, ptxas, on_record=crash_after(15))
    results = out / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[:3] + lines[4:]))  # a told record removed
    with pytest.raises(UserError, match=r"results.jsonl: does not match .*checkpoint.json \(missing candidates"):
        resume_point(RunDir(out))
    results.write_text("".join(lines + lines[5:6]))  # a record stored twice
    with pytest.raises(UserError, match=r"results.jsonl: candidate \d+ is stored twice"):
        resume_point(RunDir(out))


def test_torn_last_line_is_cut_before_appending(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    run.create("x: 1\n", {"objective_columns": [{"column": "registers", "direction": "min",
                                                 "objective": "registers", "shape": "s"}]})
    rec = TrialRecord(candidate_id=0, generation=0, config={}, acf=None, is_baseline=True, status="ok",
                      values={"registers": 40.0})
    run.append(rec)
    whole = (tmp_path / "run" / "results.jsonl").read_bytes()
    (tmp_path / "run" / "results.jsonl").write_bytes(whole + whole[:25])  # SIGKILL mid-write
    with pytest.raises(UserError, match=r"results.jsonl:2: the last line is torn .*'paretotune resume .*' repairs"):
        run.records()  # a stopped run: every reader refuses it ...
    assert len(RunDir(run.path, repairing=True).records()) == 1  # ... but resume, which cuts the line off
    assert run.recover() == 25
    with run.lock():  # the writer's view: its records may run ahead of a checkpoint (there is none here)
        run.append(TrialRecord(**{**rec.__dict__, "candidate_id": 1, "is_baseline": False}))
        assert [r.candidate_id for r in run.records()] == [0, 1]
        second = TrialRecord(**{**rec.__dict__, "candidate_id": 1, "is_baseline": False})
        (tmp_path / "run" / "results.jsonl").write_bytes(whole + json.dumps(second.to_row()).encode())  # no newline
        assert run.recover() == 0
        run.append(TrialRecord(**{**rec.__dict__, "candidate_id": 2, "is_baseline": False}))
        assert [r.candidate_id for r in run.records()] == [0, 1, 2]
