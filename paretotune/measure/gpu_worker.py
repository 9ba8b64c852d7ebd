"""The GPU measurement process: build each candidate with its ACF, check it, time it next to the baseline
(on the shape's shared timing buffers: :mod:`paretotune.measure.arms`).

It runs in its own spawned process because a bad ACF can produce an illegal address, which poisons the CUDA
context for the rest of the process: after any CUDA error the worker reports it and exits, and the parent
starts a fresh one. The parent also kills it when a candidate hangs.
"""
from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paretotune.measure.arms import TIMING_SEED, ShapeArms, arms_notes, check_candidate, open_shape
from paretotune.measure.requests import MeasureRequest
from paretotune.measure.timing import HOST, Timer, Timing, gpu_timer
from paretotune.records import Shape


@dataclass(frozen=True)
class GpuJob:
    candidate_id: int
    config: dict[str, Any]
    acf_path: str | None
    seed: int


def _is_cuda_error(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}".lower()
    return any(s in text for s in ("cuda error", "illegal memory", "illegal address", "misaligned address",
                                    "unspecified launch failure", "device-side assert", "cudaerror", "an illegal"))


def setup(campaign_path: str, campaign_text: str, ptxas_path: str, ptxas_version: str) -> Any:
    """The worker's build environment (the same as the CPU pool's: its launches find the pool's Triton cache
    entries), then the kernel adapter, re-created from the campaign file's path and text. No CUDA yet."""
    from paretotune.processes import thread_only_progress_lock
    from paretotune.toolchain.ptxas import Ptxas, export_for_triton

    thread_only_progress_lock()  # a hung candidate's worker is killed
    export_for_triton(Ptxas(path=Path(ptxas_path), version=ptxas_version))
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter

    return make_adapter(campaign_from_text(campaign_text, Path(campaign_path)))


def serve(conn: Any, request: MeasureRequest, ptxas_path: str, ptxas_version: str) -> None:
    """Child main loop: receive GpuJobs, send back per-shape results (or an error) until told to stop."""
    try:  # started while the campaign process checks the kernel: a kernel that fails to load is its to report
        adapter = setup(request.campaign_path, request.campaign_text, ptxas_path, ptxas_version)
    except Exception as exc:  # noqa: BLE001 - answered instead of "ready" (never a traceback on stderr)
        conn.send(("error", {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:500], "fatal": True}))
        return
    from paretotune.build.static_job import warm_up_compiler

    baselines: dict[str, Baseline] = {}
    import torch

    if torch.cuda.is_available():
        torch.cuda.init()  # a spare worker is ready to measure the moment it takes over (no kernel runs yet)
    warm_up_compiler(adapter, request.shapes, request.target)  # a spare that takes over builds at once
    conn.send(("ready", None))
    while True:
        msg = conn.recv()
        if msg is None:
            return
        job: GpuJob = msg
        try:  # each phase is announced first: a candidate that never finishes is reported with where it hung
            conn.send(("ok", measure(adapter, request.shapes, job, baselines, request.evaluation,
                                     note=lambda phase, kind: conn.send(("phase", (phase, kind))))))
        except Exception as exc:  # noqa: BLE001 - reported to the parent as the candidate's failure
            fatal = _is_cuda_error(exc)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            conn.send(("error", {"error": f"{type(exc).__name__}: {first}",
                                 "fatal": fatal, "traceback": traceback.format_exc(limit=4)}))
            if fatal:
                return


@dataclass
class Baseline:
    """One shape's timing buffers and baseline (its baseline config, no ACF), built once per worker, and the
    baseline's latest timing. Every candidate of the shape is bound to the same buffers."""

    arms: ShapeArms
    timing: Timing | None = None
    timed_at: float = float("-inf")
    authors: Timing | None = None  # the baseline timed as the kernel's authors do, where that differs


class PhaseClock:
    """Announces each phase to the parent with its kind, and keeps the longest seconds per kind.

    Kinds: ``build`` (host work: compiling, loading, binding), ``gpu`` (waiting for the GPU to finish a
    candidate's launch), ``timing`` (timing rounds). The parent gives each kind its own deadline, scaled from
    the baseline's longest phase of the same kind (:func:`paretotune.build.base.phase_limits`): a kernel
    that never ends is caught in the ``gpu`` wait after about a second, not after the whole job's limit."""

    def __init__(self, send: Callable[[str, str], None]) -> None:
        self._send = send
        self._kind: str | None = None
        self._since = 0.0
        self.longest: dict[str, float] = {}

    def __call__(self, phase: str, kind: str = "build") -> None:
        self.close()
        self._send(phase, kind)
        self._kind, self._since = kind, time.perf_counter()

    def close(self) -> None:
        if self._kind is not None:
            took = time.perf_counter() - self._since
            self.longest[self._kind] = max(self.longest.get(self._kind, 0.0), took)
            self._kind = None


def measure(adapter: Any, shapes: Sequence[Shape], job: GpuJob, baselines: dict[str, Baseline], spec: Any,
            timer: Timer | None = None, note: Callable[[str, str], None] = lambda phase, kind: None
            ) -> dict[str, Any]:
    """Per shape: correctness on the candidate's own fresh inputs, then the candidate timed next to the baseline
    on the shape's shared timing buffers, by the shape's GPU clock (:mod:`paretotune.measure.arms`), and its
    host cost per call (:func:`~paretotune.measure.timing.host_cost`), beside it. Where the kernel's authors
    time it otherwise (``use_cudagraph()``), their figure for the candidate and the baseline is recorded too
    (``authors_ms``, ``authors_baseline_ms``); it is never the ranking one.

    The baseline is re-timed right before the candidate (an A/B pair) unless ``spec.baseline_interval_s`` > 0
    and its last timing is younger than that; the ratio is always to the nearest baseline timing. ``timer``
    defaults to :func:`~paretotune.measure.timing.gpu_timer` with the campaign's warm-up and repetition.
    ``note(phase, kind)`` is called as each phase starts (the parent names it if the candidate times out, and
    gives each kind its deadline: :class:`PhaseClock`).
    """
    timer = timer or gpu_timer(spec.warmup_ms, spec.rep_ms)
    clock = PhaseClock(note)
    acf = Path(job.acf_path) if job.acf_path else None
    out: dict[str, Any] = {}
    for shape in shapes:
        t0 = time.perf_counter()
        label = shape.label
        clock(f"{label}: building and checking on fresh inputs")
        problem = check_candidate(adapter, job.config, shape, acf, spec.device, job.seed,
                                  waiting=lambda: clock(f"{label}: waiting for the GPU to finish the checked "
                                                        f"launch", "gpu"))
        if problem:
            return {"failed": f"{label}: {problem}"}
        if label not in baselines:
            clock(f"{label}: building and timing the baseline on the timing buffers")
            baselines[label] = Baseline(open_shape(adapter, shape, spec.device, TIMING_SEED, spec.timing, timer))
        base = baselines[label]
        arms = base.arms
        clock(f"{label}: building on the timing buffers")
        prepared = arms.bind(job.config, acf, waiting=lambda: clock(
            f"{label}: waiting for the GPU to finish the first launch on the timing buffers", "gpu"))
        build_s = time.perf_counter() - t0
        if base.timing is None or time.monotonic() - base.timed_at >= spec.baseline_interval_s:
            clock(f"{label}: re-timing the baseline", "timing")
            base.timing = arms.time(arms.baseline, timer)
            if arms.authors_method:
                base.authors = arms.time(arms.baseline, timer, arms.authors_method)
            base.timed_at = time.monotonic()
        t1 = time.perf_counter()
        clock(f"{label}: timing the candidate", "timing")
        cand_t = arms.time(prepared, timer)
        time_s = time.perf_counter() - t1
        clock(f"{label}: its host cost per call", "timing")
        host_ms = arms.time(prepared, timer, HOST).median_ms
        out[label] = {"runtime_ms": cand_t.median_ms, "baseline_ms": base.timing.median_ms,
                      "baseline_age_s": time.monotonic() - base.timed_at,
                      "samples_ms": list(cand_t.samples_ms[:200]), "build_s": build_s,
                      "time_s": time_s, "n_samples": len(cand_t.samples_ms), "host_ms": host_ms,
                      "timing": arms.method, **arms_notes(arms)}
        if arms.authors_method and base.authors is not None:
            clock(f"{label}: timing the candidate as the kernel's authors do ({arms.authors_method})", "timing")
            out[label].update(authors_ms=arms.time(prepared, timer, arms.authors_method).median_ms,
                              authors_baseline_ms=base.authors.median_ms)
        del prepared
    clock.close()
    for label in out:
        out[label]["phase_max_s"] = dict(clock.longest)
    return out
