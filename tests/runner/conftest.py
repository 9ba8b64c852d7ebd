"""Shared pieces of the campaign-loop tests: a fake evaluator (no compiles) in front of the real engine and store.

The loop, the run directory, the checkpoints and CompileIQ are real; only building and measuring is replaced,
so a test can crash the loop at an exact point and count how often each candidate was evaluated.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from paretotune.records import Candidate, TrialRecord

os.environ.setdefault("CIQ_SEARCH_SPACES_DIR", "/work/shared/compileiq")

CAMPAIGN = """\
name: resume-test
kernel:
  source: paretotune.kernels.bundled.softmax:triton_softmax
  space: {{num_stages: [1, 2, 3, 4]}}
shapes:
  - {{name: wide, M: 4096, N: 16384, dtype: float16}}
objectives: [spill_bytes, registers, theoretical_occupancy]
acf:
  search_space: {acf}
search:
  engine: {engine}
  generations: {generations}
  pool_size: {pool_size}
evaluation:
  workers: 1
seed: 7
"""


def write_campaign(folder: Path, *, engine: str = "compileiq", acf: str = "ptxas-13.3", generations: int = 3,
                   pool_size: int = 9) -> Path:
    path = folder / "campaign.yaml"
    path.write_text(CAMPAIGN.format(engine=engine, acf=acf, generations=generations, pool_size=pool_size))
    return path


class Crash(BaseException):
    """Stands in for SIGKILL: a BaseException, so no ``except Exception`` in the code under test catches it."""


class FakeEvaluator:
    """Deterministic values from the candidate's config (and its id, where it has an ACF); about one candidate in
    seven fails."""

    evaluations: ClassVar[Counter[int]] = Counter()  # candidate id -> times evaluated, over a whole test
    accepts_feed = False  # one generation at a time (FeedFakeEvaluator takes a Feed)
    measures_on_gpu = False

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)

    @staticmethod
    def digest(candidate: Candidate) -> int:
        """From the config and, for an ACF candidate, its id: not the ACF's name, which is its content's hash, and
        CompileIQ's ACF content differs from run to run under one seed (a test then drew failures or fronts
        that left nothing to check, about one run in a few)."""
        key = json.dumps([candidate.config, candidate.candidate_id if candidate.acf else None], sort_keys=True)
        return int(hashlib.sha256(key.encode()).hexdigest()[:12], 16)

    def _one(self, c: Candidate) -> TrialRecord:
        FakeEvaluator.evaluations[c.candidate_id] += 1
        h = self.digest(c)
        if not c.is_baseline and h % 7 == 0:
            return TrialRecord(candidate_id=c.candidate_id, generation=c.generation, config=c.config, acf=c.acf,
                               is_baseline=c.is_baseline, status="failed", error="fake: ptxas exited 1")
        return self.measured(c)

    def measured(self, c: Candidate) -> TrialRecord:
        """The candidate measured: values from its digest, never a failure."""
        h = self.digest(c)
        values = {"spill_bytes": float(h % 5) * 64, "registers": float(32 + h % 200),
                  "theoretical_occupancy": float(12.5 * (1 + (h >> 8) % 8))}
        return TrialRecord(candidate_id=c.candidate_id, generation=c.generation, config=c.config, acf=c.acf,
                           is_baseline=c.is_baseline, status="ok", values={k: values[k] for k in self.columns})

    def stream(self, candidates: Sequence[Candidate]) -> Iterator[TrialRecord]:
        for c in reversed(candidates):  # out of id order, like a worker pool
            yield self._one(c)

    def evaluate(self, candidates: Sequence[Candidate]) -> list[TrialRecord]:
        return list(self.stream(candidates))

    def close(self) -> None:
        pass


class FeedFakeEvaluator(FakeEvaluator):
    """The fake evaluator taking a :class:`~paretotune.build.base.Feed`, as the real ones do: the loop
    then keeps candidates in flight across generations (the steady schedule). Takes up to three at a time
    and returns them out of order, like a pool of three workers."""

    accepts_feed = True

    def stream(self, candidates: Any) -> Iterator[TrialRecord]:
        from paretotune.build.base import Feed

        if not isinstance(candidates, Feed):
            yield from super().stream(candidates)
            return
        more = True
        while more:
            got, more = candidates.take(3, 1.0)
            yield from super().stream(got)


def use_fake_evaluator(monkeypatch: pytest.MonkeyPatch, cls: type[FakeEvaluator]) -> type[FakeEvaluator]:
    """The loop builds ``cls`` instead of a real evaluator; the evaluation counts start from zero."""
    from paretotune.runner import loop

    FakeEvaluator.evaluations = Counter()
    monkeypatch.setattr(loop, "make_evaluator", lambda campaign, ptxas, run, objectives: cls(
        [o.name for o in objectives]))
    return FakeEvaluator


@pytest.fixture
def feed_fake_evaluator(monkeypatch: pytest.MonkeyPatch) -> type[FakeEvaluator]:
    return use_fake_evaluator(monkeypatch, FeedFakeEvaluator)


@pytest.fixture
def fake_evaluator(monkeypatch: pytest.MonkeyPatch) -> type[FakeEvaluator]:
    return use_fake_evaluator(monkeypatch, FakeEvaluator)


@pytest.fixture(scope="session")
def ptxas() -> Any:
    from paretotune.toolchain.ptxas import find_ptxas

    return find_ptxas()
