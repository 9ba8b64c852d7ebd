"""The local backend's GPU stage: one GPU process measures while the CPU build pool compiles.

As each candidate comes back ok from the build pool (static objectives, and the ACF compile that fills the
Triton cache) it is sent to the GPU worker for correctness + timing; ncu objectives are measured last, in one
Nsight Compute process for the whole batch. The GPU worker is restarted after a CUDA error, a crash or a
timeout; the failure is stored and the campaign goes on.
"""
from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from paretotune.measure.arms import input_seed
from paretotune.build.base import (BuildPool, Built, Feed, Measured, baseline_s_per_shape, cut_by_wall_clock,
                                       measure_time_limit, phase_limits)
from paretotune.measure.gpu_worker import GpuJob, serve
from paretotune.measure.ncu_measure import measure_batch
from paretotune.measure.requests import MeasureRequest
from paretotune.build.fork_server import worker_context
from paretotune.build.pool import adopt_environment, import_spawn_modules, in_background
from paretotune.records import Candidate, TrialRecord
from paretotune.store.run_dir import RunDir
from paretotune.toolchain.ptxas import Ptxas

READY_TIMEOUT_S = 180.0

CUT_MEASUREMENT = cut_by_wall_clock("GPU measurement")


def _serve_in(environ: dict[str, str], conn: Any, *args: Any) -> None:
    """:func:`serve` with the campaign process's environment."""
    adopt_environment(environ)
    serve(conn, *args)


class GpuWorker:
    """Parent-side handle of the measurement process: send a job, wait with a timeout, restart on trouble.

    Spare processes are kept started (imports done, CUDA initialized, default config compiled on the CPU,
    idle): a bad ACF that faults costs a restart, and on a host busy with compiles a fresh process takes
    seconds to be ready, which a second fault soon after the first would wait for in full
    (``stages.gpu_start_s`` records it; docs/results.md has the figure). With ``spares`` of them, that many
    faults in a row find a ready worker; each taken spare is replaced in the background. An idle spare holds a
    CUDA context (some hundred MB).
    """

    def __init__(self, request: MeasureRequest, ptxas: Ptxas, timeout_s: float, spares: int = 1) -> None:
        self._args = (request, str(ptxas.path), ptxas.version)
        self.timeout_s = timeout_s
        self.spares = spares
        self._proc: Any = None
        self._conn: Any = None
        self._spares: list[tuple[Any, Any]] = []  # oldest (closest to ready) first
        self._prestarting: threading.Thread | None = None  # prestart's spawning; joined before the workers are used
        self.restarts = 0
        self.last_start_s = 0.0

    def _spawn(self) -> tuple[Any, Any]:
        """A new worker from the CPU pool's fork server (torch, Triton, Helion where fork-safe; CUDA untouched)."""
        ctx = worker_context()
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve_in, args=(dict(os.environ), child, *self._args), daemon=True)
        proc.start()
        child.close()
        return proc, parent

    def prestart(self) -> None:
        """Start the worker that the first job will use and its spares, without waiting for them to be ready.

        All at once, at the campaign's start: spares started only when the first worker was ready were still
        importing when the first faulting ACF came, a few candidates into generation 1, and the next candidate
        waited for one. In a thread: a process from the fork server is started only once the server has imported
        its preloads (torch, Triton, Helion: seconds on a GPU host), which the caller spends importing the kernel."""
        if self._proc is None and not self._spares and self._prestarting is None:
            import_spawn_modules()  # a fork meanwhile (the trial import's) must not find an import lock held
            self._prestarting = threading.Thread(target=self._spawn_spares, name="gpu-prestart", daemon=True)
            self._prestarting.start()

    def _spawn_spares(self) -> None:
        for _ in range(1 + self.spares):
            try:
                self._spares.append(self._spawn())
            except Exception:  # noqa: BLE001 - the first job spawns one itself, and says what fails
                return

    def prestarted(self) -> None:
        """Wait for :meth:`prestart`'s spawning (its processes then exist; they may still be importing)."""
        if self._prestarting is not None:
            self._prestarting.join()

    def _start(self) -> None:
        self.prestarted()
        self._spares = [s for s in self._spares if s[0].is_alive()]
        proc, conn = self._spares.pop(0) if self._spares else self._spawn()
        if not conn.poll(READY_TIMEOUT_S):
            proc.kill()
            proc.join()
            raise RuntimeError("GPU worker did not start")
        status, payload = conn.recv()
        if status != "ready":
            proc.join(5)
            raise RuntimeError(f"GPU worker could not load the campaign: {payload['error']}")
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
        the stop message only once ready (a clean stop waited up to 5 s for each before the kill, and a run
        returned seconds after its last record); a spare holds nothing worth a clean exit."""
        self.prestarted()
        self._prestarting = None
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

    def run(self, job: GpuJob, n_shapes: int, timeout_s: float | None = None,
            timeout_says: str | None = None, phase_limits: dict[str, float] | None = None) -> tuple[str, Any]:
        """('ok', per-shape dict) | ('failed', reason) | ('timeout', reason). Never raises for a candidate's fault.
        ``timeout_s``: seconds per shape (default: the worker's), the whole job's limit; a timeout names the
        phase the candidate was in, after ``timeout_says`` if given (why the limit was what it was).
        ``phase_limits``: seconds per phase kind (:class:`~paretotune.measure.gpu_worker.PhaseClock`), each
        counted from the phase's start: a candidate whose kernel never ends is stopped at its ``gpu`` limit."""
        self.last_start_s = 0.0
        if self._proc is None or not self._proc.is_alive():
            t0 = time.perf_counter()
            self._start()
            self.last_start_s = time.perf_counter() - t0  # waiting for a (spare) worker to be ready
        limit = (timeout_s or self.timeout_s) * n_shapes
        whole = time.monotonic() + limit
        deadline, phase, kind = whole, "sending the job", "build"
        try:
            self._conn.send(job)
            while True:
                if not self._conn.poll(max(0.0, deadline - time.monotonic())):
                    self._restart()
                    if deadline < whole:  # a step's own limit: on the GPU a hang, on the host a slow build
                        said = "hung" if kind != "build" else "too slow"
                        return "timeout", (f"{said}: {phase} took over {phase_limits[kind]:.1f} s "
                                           f"(the limit for this step, scaled from the baseline's)")
                    return "timeout", f"{timeout_says or f'GPU measurement timed out after {limit:.0f} s'} ({phase})"
                status, payload = self._conn.recv()
                if status != "phase":
                    break
                phase, kind = payload if isinstance(payload, tuple) else (payload, "build")
                step = (phase_limits or {}).get(kind)
                deadline = min(whole, time.monotonic() + step) if step else whole
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


class LocalGpuMeasurer:
    """The measurer of the local backend: one GPU process (:class:`GpuWorker`) measures each built candidate
    as it comes, while the build pool, drained in a thread, keeps the CPU workers compiling."""

    def __init__(self, request: MeasureRequest, ptxas: Ptxas, run: RunDir,
                 baseline: TrialRecord | None = None) -> None:
        self.request, self.run = request, run
        ev = request.evaluation
        self.gpu = GpuWorker(request, ptxas, ev.measure_timeout_s, ev.gpu_spares)
        self._todo: deque[TrialRecord] = deque()
        self._limit_s = self._candidate_limit(baseline)  # per shape; a resumed run's stored baseline counts
        self._phase_limits = phase_limits(ev, baseline)  # per phase kind, from the baseline's own phases
        # time.monotonic() after which no search candidate is measured (the campaign's wall clock; None: no cut)
        self.cut_at: float | None = None

    def _candidate_limit(self, baseline: TrialRecord | None) -> float:
        return measure_time_limit(self.request.evaluation,
                                  baseline_s_per_shape(baseline, len(self.request.shapes)))

    def start(self) -> None:
        self.gpu.prestart()

    def events(self, pool: BuildPool, candidates: Sequence[Candidate] | Feed) -> Iterator[Built | Measured]:
        self.gpu.prestart()  # the GPU worker imports while the first compile runs (if start did not run)
        # The pool runs in a thread: CPU workers keep compiling while this thread waits on the GPU measurement.
        for rec in in_background(pool.run(candidates)):
            yield Built(rec)
            while self._todo:  # what the evaluator submitted for this build: measured before the next build
                yield self._measure(self._todo.popleft())

    def submit(self, record: TrialRecord) -> None:
        self._todo.append(record)

    def _measure(self, rec: TrialRecord) -> Measured:
        acf = str(self.run.acf_path(rec.acf)) if rec.acf else None  # the record carries its candidate
        n_shapes = len(self.request.shapes)
        limit = None if rec.is_baseline else self._limit_s
        cut = False
        if limit is not None and self.cut_at is not None:  # a stuck measurement must not hold the run either
            left = (self.cut_at - time.monotonic()) / n_shapes
            if left <= 0:
                return Measured(rec, "failed", CUT_MEASUREMENT)
            cut, limit = left < limit, min(limit, left)
        start = time.perf_counter()
        status, payload = self.gpu.run(GpuJob(rec.candidate_id, rec.config, acf, input_seed(
            self.request.seed, rec.candidate_id)), n_shapes, limit, CUT_MEASUREMENT if cut else None,
            None if rec.is_baseline else self._phase_limits)
        elapsed = time.perf_counter() - start
        if self.gpu.last_start_s:
            rec = replace(rec, stages={**rec.stages, "gpu_start_s": self.gpu.last_start_s})
        if status == "timeout":  # the wait on a stuck candidate (and its worker's replacement) is lost time
            rec = replace(rec, stages={**rec.stages, "gpu_lost_s": elapsed - self.gpu.last_start_s})
            status = "failed"
        rec = replace(rec, measure_s=elapsed)
        if rec.is_baseline and status == "ok":
            self._limit_s = self._candidate_limit(rec)
            self._phase_limits = phase_limits(self.request.evaluation, rec, payload)
        return Measured(rec, status, payload)

    def ncu(self, records: list[TrialRecord], metrics: list[str]) -> dict[int, dict[str, dict[str, float]]]:
        """One Nsight Compute process for the whole batch."""
        return measure_batch(self.request.shapes, self.run, records, metrics)

    def close(self) -> None:
        self.gpu.stop()
