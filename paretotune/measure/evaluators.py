"""The two evaluators, each composed of parts (:mod:`paretotune.build.base`): static (a build pool only) and GPU
(a build pool, then a measurer). Which pool and which measurer, local or Ray, is picked in
:mod:`paretotune.runner.evaluator`; the flow of records below is the same for all of them. Both read the
campaign only through their :class:`~paretotune.measure.requests.MeasureRequest`.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from paretotune.build.base import BuildPool, Built, Feed, Measurer, Session
from paretotune.build.static_job import build_limit_s, job_after_baseline
from paretotune.measure.requests import MeasureRequest
from paretotune.objectives.base import Objective, ShapeMeasurement
from paretotune.records import HOW_TIMED, Candidate, TrialRecord
from paretotune.store.run_dir import RunDir


def follow_baseline(pool: BuildPool, baseline: TrialRecord, request: MeasureRequest) -> None:
    """Search candidates' limits from the baseline's build: ptxas's (the job) and the whole build's (the pool)."""
    pool.job = job_after_baseline(baseline, request.evaluation)
    pool.timeout_s = build_limit_s(baseline, request.evaluation, len(request.shapes))


class _PoolEvaluator:
    """What both evaluators do the same way with their build pool: the evaluator's life (start early, import the
    kernel once it passed its trial, abandon on a failed check) and a batch as a list of its stream."""

    pool: BuildPool

    def stream(self, candidates: Sequence[Candidate] | Feed) -> Iterator[TrialRecord]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def evaluate(self, candidates: Sequence[Candidate]) -> list[TrialRecord]:
        return list(self.stream(candidates))

    def kernel_checked(self) -> None:
        """The kernel passed its trial import: the workers started early import it now."""
        self.pool.kernel_checked()

    def abandon(self) -> None:
        """Kill what :meth:`start` started, without waiting for it (the campaign failed its checks)."""
        self.pool.kill()
        self.close()


class StaticEvaluator(_PoolEvaluator):
    """Builds each candidate with ptxas in the build pool and reads the static objectives."""

    measures_on_gpu = False

    def __init__(self, request: MeasureRequest, pool: BuildPool, session: Session | None = None) -> None:
        self.request, self.pool, self.session = request, pool, session

    @property
    def accepts_feed(self) -> bool:
        """Whatever the pool takes: the loop keeps candidates in flight across generations where it can."""
        return self.pool.accepts_feed

    def start(self) -> None:
        """Start the worker processes now (they import and warm up while the caller checks the campaign)."""
        self.pool.start()

    def stop_work_at(self, deadline: float | None) -> None:
        stop_work_at(deadline, self.pool)

    def stream(self, candidates: Sequence[Candidate] | Feed) -> Iterator[TrialRecord]:
        """Records as each candidate finishes, so the loop stores each one at once (a crash loses none)."""
        for rec in self.pool.run(candidates):
            if rec.is_baseline:  # search candidates' build and ptxas limits follow the baseline's
                follow_baseline(self.pool, rec, self.request)
            yield rec

    def close(self) -> None:
        try:
            self.pool.close()
        finally:
            if self.session is not None:
                self.session.close()


class GpuEvaluator(_PoolEvaluator):
    """Evaluator for campaigns with runtime and/or ncu objectives (static ones are measured too): the pool
    builds (ptxas stats, and the Triton cache the measurer's builds hit) while the measurer measures."""

    measures_on_gpu = True  # the loop spaces out costly engine checkpoints so the GPU is not left waiting

    def __init__(self, request: MeasureRequest, run: RunDir, objectives: Sequence[Objective], pool: BuildPool,
                 measurer: Measurer, session: Session | None = None) -> None:
        self.request, self.run, self.objectives = request, run, list(objectives)
        self.pool, self.measurer, self.session = pool, measurer, session

    def start(self) -> None:
        """Start the CPU workers and the GPU worker with its spares now (they import and warm up while the
        caller checks the campaign)."""
        self.pool.start()
        self.measurer.start()

    def stop_work_at(self, deadline: float | None) -> None:
        stop_work_at(deadline, self.pool, self.measurer)

    @property
    def accepts_feed(self) -> bool:
        """A :class:`Feed` for :meth:`stream` (candidates in flight across generations) where the pool takes one,
        unless ncu objectives hold every record back until the batch's ncu run."""
        return self.pool.accepts_feed and not any(o.required_ncu_metrics for o in self.objectives)

    def stream(self, candidates: Sequence[Candidate] | Feed) -> Iterator[TrialRecord]:
        """Yield each record as soon as it is final, so the loop stores it at once (a kill loses nothing).

        A failed build is final at once; an ok one goes to the measurer. Without ncu objectives a candidate is
        final after its measurement; with them, after the batch's ncu run, so measured ones are held back.
        """
        needs_ncu = any(o.required_ncu_metrics for o in self.objectives)
        measured: list[tuple[TrialRecord, dict[str, Any]]] = []
        # every CPU worker starts now, importing and warming up while the first builds the baseline and the GPU
        # measures it: started after the baseline's build, they were still warming up through the first
        # generation
        self.pool.start()
        for event in self.measurer.events(self.pool, candidates):
            if isinstance(event, Built):
                rec = event.record
                if rec.is_baseline:  # search candidates' build and ptxas limits follow the baseline's
                    follow_baseline(self.pool, rec, self.request)
                if rec.status != "ok":
                    yield rec
                else:
                    self.measurer.submit(rec)
                continue
            rec = event.record
            if event.status != "ok":
                yield replace(rec, status="failed", error=event.payload)
            elif needs_ncu:
                measured.append((rec, event.payload))
            else:
                yield self._finish(rec, event.payload, {})
        ncu = self._ncu([r for r, _ in measured])
        for rec, per_shape in measured:
            yield self._finish(rec, per_shape, ncu.get(rec.candidate_id, {}))

    def _ncu(self, records: list[TrialRecord]) -> dict[int, dict[str, dict[str, float]]]:
        """{candidate_id: {shape: {metric: value}}}; a candidate left out is recorded as failed by ``_finish``."""
        metrics = sorted({m for o in self.objectives for m in o.required_ncu_metrics})
        if not metrics or not records:
            return {}
        return self.measurer.ncu(records, metrics)

    def _finish(self, rec: TrialRecord, per_shape: dict[str, Any], ncu: dict[str, dict[str, float]]) -> TrialRecord:
        values = dict(rec.values)
        extra = dict(rec.extra)
        stages = Counter(rec.stages)
        try:
            for shape in self.request.shapes:
                r = per_shape[shape.label]
                m = ShapeMeasurement(shape=shape.label, target=self.request.target, build=None,
                                     runtime_ms=r["runtime_ms"], runtime_samples_ms=tuple(r["samples_ms"]),
                                     baseline_runtime_ms=r["baseline_ms"], ncu=ncu.get(shape.label, {}),
                                     host_ms=r.get("host_ms"))
                extra.setdefault(shape.label, {}).update(
                    runtime_ms=r["runtime_ms"], baseline_ms=r["baseline_ms"],
                    ratio_to_baseline=r["runtime_ms"] / r["baseline_ms"], baseline_age_s=r["baseline_age_s"],
                    n_samples=r["n_samples"], timing=r.get("timing"), ncu=ncu.get(shape.label, {}),
                    **{k: r[k] for k in MEASURED_NOTES if k in r})
                stages["gpu_build_s"] += r["build_s"]
                stages["gpu_time_s"] += r["time_s"]
                for obj in self.objectives:
                    if obj.stage != "static":
                        values[obj.column(shape.label, self.request.multi_shape)] = obj.value(m)
        except (KeyError, ValueError) as exc:
            return replace(rec, status="failed", error=f"measurement incomplete: {exc}", values=values, extra=extra)
        return replace(rec, values=values, extra=extra, stages=dict(stages))

    def close(self) -> None:
        try:
            self.pool.close()
            self.measurer.close()
        finally:
            if self.session is not None:
                self.session.close()


# What a GPU measurement reports beside the ranking time, kept in the record's extra per shape: how the shape is
# timed (``HOW_TIMED``; ``timing`` itself is set beside the runtimes), the host's cost per call, the kernel authors'
# own figures where their method differs, and the longest phase of each kind (a resumed run's candidate deadlines
# come from these).
MEASURED_NOTES = tuple(k for k in HOW_TIMED if k != "timing") + ("host_ms", "authors_ms", "authors_baseline_ms",
                                                                  "phase_max_s")


def stop_work_at(deadline: float | None, *parts: Any) -> None:
    """No build or GPU measurement of these parts runs past ``deadline`` (``time.monotonic()``; None lifts it):
    one still going is recorded as cut, one not started is not started. The local backend's pool and measurer
    only: Ray's keep their own limits."""
    for part in parts:
        if hasattr(part, "cut_at"):
            part.cut_at = deadline
