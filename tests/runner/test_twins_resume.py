"""No-ACF twins across crashes: a run stopped before or during its twin stage adds each twin exactly once.

Same setup as test_resume.py: the loop, store, checkpoints and CompileIQ are real; the evaluator is fake.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from paretotune.records import TrialRecord
from paretotune.runner.resume import open_run, prepare_resume
from paretotune.search.twins import missing_twins
from paretotune.store import RunDir
from paretotune.store.checkpoint import Checkpointer
from runner.conftest import Crash, FakeEvaluator, write_campaign
from runner.invariants import check_engine_ledger, check_front, check_records
from runner.test_resume import SPACE, resume, start


@pytest.fixture(autouse=True)
def acf_points_on_the_front(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every measured ACF candidate gets the best value of each objective, so front 0 always holds ACF points
    and the run has twins to add (with the fake's hashed values alone, CompileIQ's unseeded samples sometimes
    left only no-ACF points on the front, and these tests then had nothing to test)."""
    real = FakeEvaluator._one
    best = {"spill_bytes": 0.0, "registers": 1.0, "theoretical_occupancy": 100.0}

    def one(self: FakeEvaluator, c: Any) -> TrialRecord:
        rec = real(self, c)
        if rec.status != "ok" or c.acf is None:
            return rec
        return dataclasses.replace(rec, values={k: best[k] for k in rec.values})

    monkeypatch.setattr(FakeEvaluator, "_one", one)


def twins_of(out: Path) -> list[TrialRecord]:
    return [r for r in RunDir(out).records() if "twin_of" in r.extra]


def assert_twins_complete(out: Path) -> None:
    records = check_records(out, 27)  # ids, one no-ACF record per front config, counters
    check_engine_ledger(out, records, SPACE)
    check_front(out)
    run = RunDir(out)
    assert missing_twins(run.results(), run.directions()) == []
    over = {i: n for i, n in FakeEvaluator.evaluations.items() if n != 1}
    assert not over, f"candidates evaluated more than once: {over}"


def test_an_uninterrupted_run_ends_with_its_twins(tmp_path: Path, fake_evaluator: Any, ptxas: Any) -> None:
    out = tmp_path / "run"
    start(write_campaign(tmp_path), out, ptxas)
    twins = twins_of(out)
    assert twins, "the front holds ACF candidates, so the search must add twins"
    by_id = {r.candidate_id: r for r in RunDir(out).records()}
    for twin in twins:
        partner = by_id[twin.extra["twin_of"]]
        assert twin.acf is None and partner.acf is not None and twin.config == partner.config
    assert_twins_complete(out)
    assert resume(out, ptxas) == []  # complete: a resume evaluates nothing, adds no twin twice
    assert len(twins_of(out)) == len(twins)


def test_crash_before_the_twins_are_committed(tmp_path: Path, fake_evaluator: Any, ptxas: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Budget spent and told, twins not issued yet: the run is not complete until they are measured."""
    out = tmp_path / "run"
    real = Checkpointer.commit

    def commit(self: Checkpointer, engine: Any, **kw: Any) -> Any:
        if any(c.twin_of is not None for c in kw["pending"]):
            raise Crash("before the twins' commit")
        return real(self, engine, **kw)

    monkeypatch.setattr(Checkpointer, "commit", commit)
    with pytest.raises(Crash):
        start(write_campaign(tmp_path), out, ptxas)
    monkeypatch.setattr(Checkpointer, "commit", real)
    assert twins_of(out) == []
    plan = prepare_resume(open_run(out), ptxas)
    assert plan.twins_missing and not plan.complete
    resume(out, ptxas)
    assert twins_of(out)
    assert_twins_complete(out)
    assert prepare_resume(open_run(out), ptxas).complete


def test_crash_after_the_first_twin_is_stored(tmp_path: Path, fake_evaluator: Any, ptxas: Any) -> None:
    out = tmp_path / "run"

    def on_record(rec: TrialRecord) -> None:
        if "twin_of" in rec.extra:
            raise Crash("after the first twin")

    with pytest.raises(Crash):
        start(write_campaign(tmp_path), out, ptxas, on_record=on_record)
    assert len(twins_of(out)) == 1
    resume(out, ptxas)
    assert_twins_complete(out)
    assert prepare_resume(open_run(out), ptxas).complete
