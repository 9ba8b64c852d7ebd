"""The GPU measurement process: build each candidate with its ACF, check it, time it next to the baseline
(on the shape's shared timing buffers: :mod:`paretotune.execution.arms`).

It runs in its own spawned process because a bad ACF can produce an illegal address, which poisons the CUDA
context for the rest of the process: after any CUDA error the worker reports it and exits, and the parent
starts a fresh one. The parent also kills it when a candidate hangs.
"""
from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paretotune.execution.arms import TIMING_SEED, ShapeArms, arms_notes, check_candidate, open_shape
from paretotune.execution.timing import Timer, Timing, gpu_timer


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


def setup(campaign_path: str, campaign_text: str, ptxas_path: str, ptxas_version: str) -> tuple[Any, Any]:
    """The worker's build environment (the same as the CPU pool's: its launches find the pool's Triton cache
    entries), then the campaign and its adapter. No CUDA yet."""
    from paretotune.toolchain.ptxas import Ptxas, export_for_triton

    export_for_triton(Ptxas(path=Path(ptxas_path), version=ptxas_version))
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter

    campaign = campaign_from_text(campaign_text, Path(campaign_path))
    return campaign, make_adapter(campaign)


def serve(conn: Any, campaign_path: str, campaign_text: str, ptxas_path: str, ptxas_version: str) -> None:
    """Child main loop: receive GpuJobs, send back per-shape results (or an error) until told to stop."""
    try:  # started while the campaign process checks the kernel: a kernel that fails to load is its to report
        campaign, adapter = setup(campaign_path, campaign_text, ptxas_path, ptxas_version)
    except Exception as exc:  # noqa: BLE001 - answered instead of "ready" (never a traceback on stderr)
        conn.send(("error", {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:500], "fatal": True}))
        return
    from paretotune.execution.static_job import warm_up_compiler

    spec = campaign.spec.evaluation
    baselines: dict[str, Baseline] = {}
    import torch

    if torch.cuda.is_available():
        torch.cuda.init()  # a spare worker is ready to measure the moment it takes over (no kernel runs yet)
    warm_up_compiler(adapter, campaign)  # a spare that takes over builds its first candidate at once
    conn.send(("ready", None))
    while True:
        msg = conn.recv()
        if msg is None:
            return
        job: GpuJob = msg
        try:  # each phase is announced first: a candidate that never finishes is reported with where it hung
            conn.send(("ok", measure(adapter, campaign, job, baselines, spec,
                                     note=lambda phase: conn.send(("phase", phase)))))
        except Exception as exc:  # noqa: BLE001 - reported to the parent as the candidate's failure
            fatal = _is_cuda_error(exc)
            conn.send(("error", {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
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


def measure(adapter: Any, campaign: Any, job: GpuJob, baselines: dict[str, Baseline], spec: Any,
            timer: Timer | None = None, note: Callable[[str], None] = lambda phase: None) -> dict[str, Any]:
    """Per shape: correctness on the candidate's own fresh inputs, then the candidate timed next to the baseline
    on the shape's shared timing buffers.

    The baseline is re-timed right before the candidate (an A/B pair) unless ``spec.baseline_interval_s`` > 0
    and its last timing is younger than that; the ratio is always to the nearest baseline timing. ``timer``
    defaults to :func:`~paretotune.execution.timing.gpu_timer` with the campaign's warm-up and repetition.
    ``note(phase)`` is called as each phase starts (the parent names it if the candidate times out).
    """
    timer = timer or gpu_timer(spec.warmup_ms, spec.rep_ms)
    acf = Path(job.acf_path) if job.acf_path else None
    out: dict[str, Any] = {}
    for shape in campaign.shapes:
        t0 = time.perf_counter()
        note(f"{shape.label}: building and checking on fresh inputs")
        problem = check_candidate(adapter, job.config, shape, acf, spec.device, job.seed)
        if problem:
            return {"failed": f"{shape.label}: {problem}"}
        if shape.label not in baselines:
            note(f"{shape.label}: building and timing the baseline on the timing buffers")
            baselines[shape.label] = Baseline(open_shape(adapter, shape, spec.device, TIMING_SEED, spec.timing,
                                                         timer))
        base = baselines[shape.label]
        note(f"{shape.label}: building on the timing buffers")
        prepared = base.arms.bind(job.config, acf)
        build_s = time.perf_counter() - t0
        method = base.arms.method
        if base.timing is None or time.monotonic() - base.timed_at >= spec.baseline_interval_s:
            note(f"{shape.label}: re-timing the baseline")
            base.timing = base.arms.time(base.arms.baseline, timer)
            base.timed_at = time.monotonic()
        t1 = time.perf_counter()
        note(f"{shape.label}: timing the candidate")
        cand_t = base.arms.time(prepared, timer)
        out[shape.label] = {"runtime_ms": cand_t.median_ms, "baseline_ms": base.timing.median_ms,
                            "baseline_age_s": time.monotonic() - base.timed_at,
                            "samples_ms": list(cand_t.samples_ms[:200]), "build_s": build_s,
                            "time_s": time.perf_counter() - t1, "n_samples": len(cand_t.samples_ms),
                            "timing": method, **arms_notes(base.arms)}
        del prepared
    return out
