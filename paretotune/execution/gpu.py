"""GPU evaluation: CPU workers build (ptxas stats, warm Triton's cache) while one GPU process measures.

Flow per batch: every candidate goes to the CPU pool (static objectives, and the ACF compile that fills the
Triton cache); as each comes back ok it is sent to the GPU worker for correctness + timing; ncu objectives
are measured last, in one Nsight Compute process for the whole batch. The GPU worker is restarted after a
CUDA error, a crash or a timeout; the failure is stored and the campaign goes on.
"""
from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from paretotune.campaign.load import Campaign
from paretotune.execution.gpu_worker import GpuJob, serve
from paretotune.execution.pool import Feed, WorkerPool, adopt_environment, in_background, worker_context
from paretotune.execution.static_job import WorkerContext, init_worker, job_after_baseline
from paretotune.objectives.base import Objective, ShapeMeasurement
from paretotune.records import Candidate, TrialRecord
from paretotune.store.run_dir import RunDir
from paretotune.toolchain.ptxas import Ptxas

READY_TIMEOUT_S = 180.0
COMPILE_NICE = 5  # CPU workers compile at a lower priority than the GPU worker and its starting spares


def _serve_in(environ: dict[str, str], conn: Any, *args: Any) -> None:
    """:func:`serve` with the campaign process's environment."""
    adopt_environment(environ)
    serve(conn, *args)


def input_seed(campaign_seed: int, candidate_id: int) -> int:
    """Each candidate gets its own fresh random inputs, reproducible from the campaign seed."""
    return campaign_seed * 100003 + candidate_id


class GpuWorker:
    """Parent-side handle of the measurement process: send a job, wait with a timeout, restart on trouble.

    Spare processes are kept started (imports done, CUDA initialized, default config compiled on the CPU,
    idle): a bad ACF that faults costs a restart, and on an H200 host busy with compiles a fresh process took
    about 16 s to be ready, which a second fault soon after the first then waited for in full (2026-11-30,
    ``stages.gpu_start_s``). With ``spares`` of them, that many faults in a row find a ready worker; each
    taken spare is replaced in the background. An idle spare holds a CUDA context (some hundred MB).
    """

    def __init__(self, campaign: Campaign, ptxas: Ptxas, timeout_s: float, spares: int = 1) -> None:
        self._args = (str(campaign.path), campaign.text, str(ptxas.path), ptxas.version)
        self.timeout_s = timeout_s
        self.spares = spares
        self._proc: Any = None
        self._conn: Any = None
        self._spares: list[tuple[Any, Any]] = []  # oldest (closest to ready) first
        self.restarts = 0
        self.last_start_s = 0.0

    def _spawn(self) -> tuple[Any, Any]:
        """A new worker from the CPU pool's fork server (torch and Triton already imported, CUDA untouched)."""
        ctx = worker_context()
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve_in, args=(dict(os.environ), child, *self._args), daemon=True)
        proc.start()
        child.close()
        return proc, parent

    def prestart(self) -> None:
        """Start the worker that the first job will use and its spares, without waiting for them to be ready.

        All at once, at the campaign's start: spares started only when the first worker was ready were still
        importing when the first faulting ACF came, a few candidates into generation 1 (on the H200 host the
        next candidate waited 15.0 s and 9.8 s for one, 2026-11-30, run 7)."""
        if self._proc is None and not self._spares:
            self._spares = [self._spawn() for _ in range(1 + self.spares)]

    def _start(self) -> None:
        self._spares = [s for s in self._spares if s[0].is_alive()]
        proc, conn = self._spares.pop(0) if self._spares else self._spawn()
        if not conn.poll(READY_TIMEOUT_S):
            proc.kill()
            proc.join()
            raise RuntimeError("GPU worker did not start")
        status, _ = conn.recv()
        assert status == "ready"
        self._proc, self._conn = proc, conn
        while len(self._spares) < self.spares:
            self._spares.append(self._spawn())

    @staticmethod
    def _end(proc: Any, conn: Any) -> None:
        try:
            conn.send(None)
            proc.join(5)
        except (OSError, BrokenPipeError):
            pass
        if proc.is_alive():
            proc.kill()
            proc.join()

    def stop(self) -> None:
        """End the measuring worker in order; kill the spares at once. A spare may still be importing, and reads
        the stop message only once ready (up to 5 s each before the kill; run 6 of the H200 benchmark returned
        14 s after its last record); a spare holds nothing worth a clean exit."""
        for proc, _ in self._spares:
            proc.kill()
        if self._proc is not None:
            self._end(self._proc, self._conn)
        for proc, _ in self._spares:
            proc.join()
        self._proc = self._conn = None
        self._spares = []

    def _restart(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
            self._proc.join()
        self._proc = self._conn = None
        self.restarts += 1

    def run(self, job: GpuJob, n_shapes: int) -> tuple[str, Any]:
        """('ok', per-shape dict) | ('failed', reason). Never raises for a candidate's fault."""
        self.last_start_s = 0.0
        if self._proc is None or not self._proc.is_alive():
            t0 = time.perf_counter()
            self._start()
            self.last_start_s = time.perf_counter() - t0  # waiting for a (spare) worker to be ready
        try:
            self._conn.send(job)
            if not self._conn.poll(self.timeout_s * n_shapes):
                self._restart()
                return "failed", f"GPU measurement timed out after {self.timeout_s * n_shapes:.0f} s"
            status, payload = self._conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            code = self._proc.exitcode if self._proc is not None else None
            self._restart()
            return "failed", f"GPU worker died (exit code {code})"
        if status == "error":
            if payload["fatal"]:
                self._restart()
            return "failed", payload["error"]
        if "failed" in payload:
            return "failed", payload["failed"]
        return "ok", payload


class GpuEvaluator:
    """Evaluator for campaigns with runtime and/or ncu objectives (static ones are measured too)."""

    def __init__(self, campaign: Campaign, ptxas: Ptxas, run: RunDir, objectives: Sequence[Objective]) -> None:
        self.campaign, self.run, self.objectives = campaign, run, list(objectives)
        ev = campaign.spec.evaluation
        ctx = WorkerContext(campaign_path=str(campaign.path), campaign_text=campaign.text,
                            ptxas_path=str(ptxas.path), ptxas_version=ptxas.version, acf_dir=str(run.path / "acf"),
                            precompile=True, compile_timeout_s=ev.compile_timeout_s)
        self.pool = WorkerPool(job_after_baseline(run.baseline(), ev), init_worker, (ctx,), ev.workers,
                               ev.compile_timeout_s * len(campaign.shapes) + 30.0, nice=COMPILE_NICE)
        self.gpu = GpuWorker(campaign, ptxas, ev.measure_timeout_s, ev.gpu_spares)

    def evaluate(self, candidates: Sequence[Candidate]) -> list[TrialRecord]:
        return list(self.stream(candidates))

    measures_on_gpu = True  # the loop spaces out costly engine checkpoints so this GPU is not left waiting

    @property
    def accepts_feed(self) -> bool:
        """A :class:`Feed` for :meth:`stream` (candidates in flight across generations), unless ncu objectives
        hold every record back until the batch's one ncu process."""
        return not any(o.required_ncu_metrics for o in self.objectives)

    def stream(self, candidates: Sequence[Candidate] | Feed) -> Iterator[TrialRecord]:
        """Yield each record as soon as it is final, so the loop stores it at once (a kill loses nothing).

        Without ncu objectives a candidate is final after its GPU measurement; with them, after the batch's
        one ncu process, so measured candidates are held back until then.
        """
        needs_ncu = any(o.required_ncu_metrics for o in self.objectives)
        measured: list[tuple[TrialRecord, dict[str, Any]]] = []
        self.gpu.prestart()  # the GPU worker imports while the first compile runs
        # The pool runs in a thread: CPU workers keep compiling while this thread waits on the GPU measurement.
        for rec in in_background(self.pool.run(candidates)):
            if rec.is_baseline:  # search candidates' ptxas limit follows the baseline's ptxas time
                self.pool.job = job_after_baseline(rec, self.campaign.spec.evaluation)
            self.pool.start()  # the other CPU workers import and warm up while the GPU measures (once)
            if rec.status != "ok":
                yield rec
                continue
            acf = str(self.run.acf_path(rec.acf)) if rec.acf else None  # the record carries its candidate
            start = time.perf_counter()
            status, payload = self.gpu.run(GpuJob(rec.candidate_id, rec.config, acf, input_seed(
                self.campaign.spec.seed, rec.candidate_id)), len(self.campaign.shapes))
            elapsed = time.perf_counter() - start
            if self.gpu.last_start_s:
                rec = replace(rec, stages={**rec.stages, "gpu_start_s": self.gpu.last_start_s})
            if status != "ok":
                yield replace(rec, status="failed", error=payload, measure_s=elapsed)
            elif needs_ncu:
                measured.append((replace(rec, measure_s=elapsed), payload))
            else:
                yield self._finish(replace(rec, measure_s=elapsed), payload, {})
        ncu = self._ncu([r for r, _ in measured])
        for rec, per_shape in measured:
            yield self._finish(rec, per_shape, ncu.get(rec.candidate_id, {}))

    def _ncu(self, records: list[TrialRecord]) -> dict[int, dict[str, dict[str, float]]]:
        metrics = sorted({m for o in self.objectives for m in o.required_ncu_metrics})
        if not metrics or not records:
            return {}
        from paretotune.execution.ncu_batch import measure_batch

        return measure_batch(self.campaign, self.run, records, metrics)

    def _finish(self, rec: TrialRecord, per_shape: dict[str, Any], ncu: dict[str, dict[str, float]]) -> TrialRecord:
        values = dict(rec.values)
        extra = dict(rec.extra)
        stages = Counter(rec.stages)
        try:
            for shape in self.campaign.shapes:
                r = per_shape[shape.label]
                m = ShapeMeasurement(shape=shape.label, target=self.campaign.target, build=None,
                                     runtime_ms=r["runtime_ms"], runtime_samples_ms=tuple(r["samples_ms"]),
                                     baseline_runtime_ms=r["baseline_ms"], ncu=ncu.get(shape.label, {}))
                extra.setdefault(shape.label, {}).update(
                    runtime_ms=r["runtime_ms"], baseline_ms=r["baseline_ms"],
                    ratio_to_baseline=r["runtime_ms"] / r["baseline_ms"], baseline_age_s=r["baseline_age_s"],
                    n_samples=r["n_samples"], timing=r.get("timing"), ncu=ncu.get(shape.label, {}))
                stages["gpu_build_s"] += r["build_s"]
                stages["gpu_time_s"] += r["time_s"]
                for obj in self.objectives:
                    if obj.stage != "static":
                        values[obj.column(shape.label, self.campaign.multi_shape)] = obj.value(m)
        except (KeyError, ValueError) as exc:
            return replace(rec, status="failed", error=f"measurement incomplete: {exc}", values=values, extra=extra)
        return replace(rec, values=values, extra=extra, stages=dict(stages))

    def close(self) -> None:
        self.pool.close()
        self.gpu.stop()
