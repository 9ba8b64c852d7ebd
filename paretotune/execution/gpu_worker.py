"""The GPU measurement process: build each candidate with its ACF, check it, time it next to the baseline.

It runs in its own spawned process because a bad ACF can produce an illegal address, which poisons the CUDA
context for the rest of the process: after any CUDA error the worker reports it and exits, and the parent
starts a fresh one. The parent also kills it when a candidate hangs.
"""
from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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


def serve(conn: Any, campaign_path: str, campaign_text: str, ptxas_path: str, ptxas_version: str) -> None:
    """Child main loop: receive GpuJobs, send back per-shape results (or an error) until told to stop."""
    from paretotune.toolchain.ptxas import Ptxas, export_for_triton

    export_for_triton(Ptxas(path=Path(ptxas_path), version=ptxas_version))
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    from paretotune.campaign.load import campaign_from_text, make_adapter

    campaign = campaign_from_text(campaign_text, Path(campaign_path))
    adapter = make_adapter(campaign)
    spec = campaign.spec.evaluation
    baselines: dict[str, Any] = {}
    conn.send(("ready", None))
    while True:
        msg = conn.recv()
        if msg is None:
            return
        job: GpuJob = msg
        try:
            conn.send(("ok", measure(adapter, campaign, job, baselines, spec.device, spec.warmup_ms, spec.rep_ms)))
        except Exception as exc:  # noqa: BLE001 - reported to the parent as the candidate's failure
            fatal = _is_cuda_error(exc)
            conn.send(("error", {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
                                 "fatal": fatal, "traceback": traceback.format_exc(limit=4)}))
            if fatal:
                return


def measure(adapter: Any, campaign: Any, job: GpuJob, baselines: dict[str, Any], device: str, warmup_ms: float,
            rep_ms: float) -> dict[str, Any]:
    """Per shape: correctness on fresh random inputs, then baseline and candidate timed back to back."""
    import torch

    from paretotune.execution.timing import bench, check_output

    acf = Path(job.acf_path) if job.acf_path else None
    out: dict[str, Any] = {}
    for shape in campaign.shapes:
        t0 = time.perf_counter()
        prepared = adapter.prepare(job.config, shape, acf, device, job.seed)
        if prepared.output is not None and prepared.output.is_floating_point():
            prepared.output.fill_(float("nan"))  # an unwritten element must fail the check
        got = prepared.launch()
        torch.cuda.synchronize()
        problem = check_output(got, prepared.reference(), prepared.atol, prepared.rtol)
        compile_s = time.perf_counter() - t0
        if problem:
            return {"failed": f"{shape.label}: {problem}"}
        if shape.label not in baselines:
            base = adapter.prepare(adapter.default_config(), shape, None, device, 12345)
            base.launch()
            torch.cuda.synchronize()
            baselines[shape.label] = base
        base_t = bench(baselines[shape.label].launch, warmup_ms, rep_ms)
        cand_t = bench(prepared.launch, warmup_ms, rep_ms)
        out[shape.label] = {"runtime_ms": cand_t.median_ms, "baseline_ms": base_t.median_ms,
                            "samples_ms": list(cand_t.samples_ms[:200]), "compile_s": compile_s,
                            "n_samples": len(cand_t.samples_ms)}
        del prepared
    return out
