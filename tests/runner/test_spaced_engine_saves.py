"""On GPU campaigns a costly engine checkpoint is spaced out (runner/ledger.py), and the resume promise holds.

CompileIQ's checkpoint took 0.13 s per save at 50 records and 0.5 s at 200 on the dev box
(benchmarks/results/engine_save_devbox.json), and the steady schedule commits after every record; spacing the
saves out raised GPU busy from 63 % to 76 % on the H200 (benchmarks/results/h200_2026-12-01e). Same
fakes as test_resume_steady.py (real loop, store, checkpoints, CompileIQ; no compiles), with the engine's save
made slow (60 ms) and an evaluator that says it measures on a GPU.
"""
from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from paretotune.runner.ledger import COSTLY_SAVE_S
from paretotune.search.compileiq_engine import CompileIQEngine
from paretotune.store import RunDir
from paretotune.store.checkpoint import Checkpointer, read_checkpoint
from runner.conftest import Crash, FakeEvaluator, FeedFakeEvaluator, use_fake_evaluator, write_campaign
from runner.invariants import check_front, check_records
from runner.test_resume import crash_after, resume, start

SLOW_SAVE_S = 0.06


class GpuFeedFakeEvaluator(FeedFakeEvaluator):
    measures_on_gpu = True


@pytest.fixture
def slow_saves(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every CompileIQ save sleeps SLOW_SAVE_S first; counts engine saves and loop commits."""
    counts: Counter[str] = Counter()
    real_save, real_commit = CompileIQEngine.save, Checkpointer.commit

    def save(self: CompileIQEngine, path: str) -> bool:
        counts["saves"] += 1
        time.sleep(SLOW_SAVE_S)
        return real_save(self, path)

    def commit(self: Checkpointer, engine: Any, **kw: Any) -> Any:
        counts["commits"] += 1
        return real_commit(self, engine, **kw)

    monkeypatch.setattr(CompileIQEngine, "save", save)
    monkeypatch.setattr(Checkpointer, "commit", commit)
    return counts


def test_gpu_campaign_spaces_out_costly_engine_saves(tmp_path: Path, ptxas: Any, slow_saves: Counter[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    assert SLOW_SAVE_S >= COSTLY_SAVE_S
    use_fake_evaluator(monkeypatch, GpuFeedFakeEvaluator)
    start(write_campaign(tmp_path), tmp_path / "run", ptxas)
    check_records(tmp_path / "run", 27)
    check_front(tmp_path / "run")
    assert slow_saves["saves"] < slow_saves["commits"] / 2, slow_saves
    assert not {i: n for i, n in FakeEvaluator.evaluations.items() if n != 1}
    cp = read_checkpoint(tmp_path / "run")  # the search's end saved the engine: a resume restores, not restarts
    assert cp is not None and cp.engine_file is not None and not cp.engine_pending


def test_static_campaign_saves_the_engine_at_every_commit(tmp_path: Path, ptxas: Any, slow_saves: Counter[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_evaluator(monkeypatch, FeedFakeEvaluator)
    start(write_campaign(tmp_path), tmp_path / "run", ptxas)
    check_records(tmp_path / "run", 27)
    assert slow_saves["saves"] == slow_saves["commits"], slow_saves


@pytest.mark.parametrize("n", [6, 15, 24])
def test_crash_between_spaced_saves_loses_and_repeats_nothing(tmp_path: Path, ptxas: Any, slow_saves: Counter[str],
                                                              monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """A resume after a commit that skipped the engine save restarts or restores the engine; every stored
    record stays, none is evaluated again, and the run completes to its budget."""
    use_fake_evaluator(monkeypatch, GpuFeedFakeEvaluator)
    out = tmp_path / "run"
    with pytest.raises(Crash):
        start(write_campaign(tmp_path), out, ptxas, on_record=crash_after(n))
    stored = {r.candidate_id for r in RunDir(out).records()}
    assert len(stored) == n
    resume(out, ptxas)
    check_records(out, 27)
    check_front(out)
    again = {i for i, k in FakeEvaluator.evaluations.items() if k != 1}
    assert not again & stored, f"stored candidates evaluated again: {sorted(again & stored)}"
