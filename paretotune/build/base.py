"""What an evaluator is made of, and what its parts share.

An evaluator (:mod:`.evaluators`) is composed, by :func:`paretotune.runner.evaluator.evaluator_for`, of a
:class:`BuildPool` (the static job on CPU workers: local processes or Ray actors) and, when an objective needs
the GPU, a :class:`Measurer` (a local GPU process or Ray GPU actors). The protocols live here, apart from
the implementations, so that no part imports another to know its shape; so do the :class:`Feed` that the
campaign loop fills while a pool runs and :func:`failed_record`, the one way a candidate becomes a failure.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from paretotune.records import Candidate, TrialRecord


def failed_record(candidate: Candidate, error: str, compile_s: float = 0.0) -> TrialRecord:
    """The record of a candidate that failed before it had values (build error, timeout, crashed worker)."""
    return TrialRecord(candidate_id=candidate.candidate_id, generation=candidate.generation, config=candidate.config,
                       acf=candidate.acf, is_baseline=candidate.is_baseline, status="failed", error=error,
                       compile_s=compile_s)


CUT_PREFIX = "cut: the campaign's wall-clock budget"


def cut_by_wall_clock(what: str) -> str:
    """Why a candidate failed when the campaign's wall clock stopped its ``what`` (the pool's and the measurer's
    cut say it alike)."""
    return f"{CUT_PREFIX} (search.wall_clock_s) ran out before its {what}"


def was_cut(record: TrialRecord) -> bool:
    """A failure the wall clock made, not the candidate: the builds and measurements still in flight at the cut
    (a good share of a short campaign's failures), counted apart so that they do not read as broken configs or
    ACFs."""
    return record.status != "ok" and record.error.startswith(CUT_PREFIX)


def baseline_s_per_shape(baseline: TrialRecord | None, n_shapes: int) -> float | None:
    """The baseline's GPU measurement seconds per shape (not the wait for a worker), if it was measured."""
    if baseline is None or baseline.status != "ok" or baseline.measure_s <= 0:
        return None
    return (baseline.measure_s - baseline.stages.get("gpu_start_s", 0.0)) / n_shapes


def scaled_limit(factor: float, baseline_s: float | None, floor_s: float, cap_s: float) -> float:
    """A search candidate's time limit: ``factor`` times the baseline's seconds, within [``floor_s``,
    ``cap_s``]; ``cap_s`` without a baseline figure or with a factor of 0 (ptxas and GPU measurement limits)."""
    if not factor or not baseline_s or baseline_s <= 0:
        return float(cap_s)
    return float(min(cap_s, round(max(floor_s, factor * baseline_s), 1)))


GPU_WAIT_FLOOR_S = 1.0  # the least a candidate's wait for the GPU may take before it counts as hung
TIMING_FLOOR_S = 2.0  # the least a timing step may take (a profiler or a graph capture starts in it)
BUILD_FLOOR_S = 5.0  # the least a build step on the GPU worker may take (a restarted worker opens its shape)
BUILD_VS_BASELINE = 5.0  # x the baseline's longest build step: the CPU pool built the candidate already, so the
# GPU worker's build is a cache load; one that compiles again (tens of seconds) holds the GPU idle


def phase_limits(evaluation: Any, baseline: TrialRecord | None,
                 per_shape: dict[str, Any] | None = None) -> dict[str, float] | None:
    """Seconds each kind of a search candidate's GPU phase may take (``gpu``: waiting for its launch to finish;
    ``timing``: one timing step): ``measure_timeout_vs_baseline`` times the baseline's longest phase of that
    kind, at least :data:`GPU_WAIT_FLOOR_S` / :data:`TIMING_FLOOR_S`, at most ``measure_timeout_s``. The
    baseline's phases come from its measurement (``per_shape``) or from its stored record (a resumed run). None
    (only the whole job's limit) without a baseline figure or with a factor of 0. ``build`` (host work on the
    GPU worker): :data:`BUILD_VS_BASELINE` times the baseline's longest, at least :data:`BUILD_FLOOR_S`."""
    factor = evaluation.measure_timeout_vs_baseline
    if not factor or baseline is None or baseline.status != "ok":
        return None
    shapes = per_shape if per_shape is not None else baseline.extra
    longest: dict[str, float] = {}
    for figures in shapes.values():
        for kind, seconds in (figures.get("phase_max_s") or {}).items() if isinstance(figures, dict) else ():
            longest[kind] = max(longest.get(kind, 0.0), float(seconds))
    if not longest:
        return None
    def limit(times: float, seconds: float, floor: float) -> float:
        return float(min(evaluation.measure_timeout_s, round(max(floor, times * seconds), 1)))

    limits = {"gpu": limit(factor, longest.get("gpu", 0.0), GPU_WAIT_FLOOR_S),
              "timing": limit(factor, longest.get("timing", 0.0), TIMING_FLOOR_S)}
    if longest.get("build"):
        limits["build"] = limit(BUILD_VS_BASELINE, longest["build"], BUILD_FLOOR_S)
    return limits


def measure_time_limit(evaluation: Any, baseline_s_per_shape: float | None) -> float:
    """Seconds a search candidate's GPU measurement may take per shape: ``measure_timeout_vs_baseline`` times
    the baseline's (its measurement includes opening the shape and the first build, so the factor is
    generous), within [``measure_timeout_min_s``, ``measure_timeout_s``]. A kernel that never finishes then
    costs seconds, not a minute per shape."""
    return scaled_limit(evaluation.measure_timeout_vs_baseline, baseline_s_per_shape,
                        evaluation.measure_timeout_min_s, evaluation.measure_timeout_s)


class Feed:
    """Candidates that arrive while :meth:`.pool.WorkerPool.run` is running: the campaign loop puts each batch the
    engine proposes, and closes the feed when it proposes no more. A worker that frees up takes the next one at
    once, so a slow compile (a ptxas near its limit) holds only its own worker, never the ones after it."""

    def __init__(self, candidates: Sequence[Candidate] = ()) -> None:
        self._items: list[Candidate] = list(candidates)
        self._closed = False
        self._cond = threading.Condition()

    def put(self, candidates: Sequence[Candidate]) -> None:
        with self._cond:
            if self._closed:
                raise RuntimeError("the feed is closed")
            self._items.extend(candidates)
            self._cond.notify_all()

    def close(self) -> None:
        """No more candidates: :meth:`.pool.WorkerPool.run` ends once those already put are done."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def take(self, n: int, wait_s: float) -> tuple[list[Candidate], bool]:
        """Up to ``n`` candidates, waiting up to ``wait_s`` for the first; and whether more may come."""
        with self._cond:
            if not self._items and not self._closed and wait_s > 0:
                self._cond.wait(wait_s)
            out, self._items = self._items[:n], self._items[n:]
            return out, bool(self._items) or not self._closed


class Evaluator(Protocol):
    """Builds and measures candidates. ``stream`` yields each record as soon as it is final, so the loop stores
    it at once (a crash loses no finished evaluation); ``evaluate`` is ``list(stream(...))``. ``accepts_feed``:
    ``stream`` also takes a :class:`Feed` (the loop then keeps candidates in flight across generations)."""

    measures_on_gpu: bool  # the loop then spaces out costly engine checkpoints (a waiting GPU costs most)

    @property
    def accepts_feed(self) -> bool: ...
    def stream(self, candidates: Sequence[Candidate] | Feed) -> Iterator[TrialRecord]: ...
    def evaluate(self, candidates: Sequence[Candidate]) -> list[TrialRecord]: ...
    def start(self) -> None: ...  # start worker processes early (idempotent); stream starts them anyway
    def kernel_checked(self) -> None: ...  # the kernel passed its trial import: early workers may import it now
    def abandon(self) -> None: ...  # kill them at once: the campaign failed a check before its first candidate
    def close(self) -> None: ...


class BuildPool(Protocol):
    """The CPU stage: ``job(candidate)`` (the static job) on each candidate, in worker processes or actors, each
    cut after ``timeout_s``. Both may be replaced between candidates (the limits follow the baseline's build)."""

    job: Callable[[Candidate], TrialRecord]
    timeout_s: float

    @property
    def accepts_feed(self) -> bool: ...
    def run(self, candidates: Sequence[Candidate] | Feed) -> Iterator[TrialRecord]: ...
    def start(self) -> None: ...
    def kernel_checked(self) -> None: ...  # workers started early import the kernel only after this (or run)
    def kill(self) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class Built:
    """A record the build pool finished; if ok, the evaluator submits it to the measurer."""

    record: TrialRecord


@dataclass(frozen=True)
class Measured:
    """A measurement that ended: ``status`` "ok" with the per-shape results as ``payload``, or "failed" with
    the reason. ``record`` carries the measurement's time (and where it ran)."""

    record: TrialRecord
    status: str
    payload: Any


class Measurer(Protocol):
    """The GPU stage: measures each built candidate that the evaluator submits, and the ncu metrics last."""

    def events(self, pool: BuildPool, candidates: Sequence[Candidate] | Feed) -> Iterator[Built | Measured]:
        """Run ``pool`` over ``candidates``; yield each build as it ends and each measurement as it ends."""
        ...

    def start(self) -> None: ...  # start the GPU worker(s) before the first candidate (idempotent)
    def submit(self, record: TrialRecord) -> None: ...
    def ncu(self, records: list[TrialRecord], metrics: list[str]) -> dict[int, dict[str, dict[str, float]]]: ...
    def close(self) -> None: ...


class Session(Protocol):
    """What an evaluator closes after its parts (a Ray connection)."""

    def close(self) -> None: ...
