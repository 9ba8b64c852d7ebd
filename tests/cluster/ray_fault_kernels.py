"""A tiny Triton kernel whose FAULT knob makes the evaluating process crash, hang or raise, at a chosen stage.

The fault fires in ``args()``, which paretotune calls in the worker that builds or measures the candidate:
with meta tensors in the static stage (CPU actors), with real tensors in the measurement stage (GPU actors).
Without CUDA the inputs live on the CPU, so the measurement stage can be driven on a CPU-only machine up to
the kernel launch (which then fails, as a non-fatal error).
"""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from typing import Any

import torch
import triton
import triton.language as tl

from paretotune.kernels.triton import TritonKernel

NONE, STATIC_CRASH, STATIC_HANG, GPU_CRASH, GPU_HANG, GPU_CUDA_ERROR = range(6)


@triton.jit
def scale_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr, FAULT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=mask) * 2.0, mask=mask)


def _inputs(shape: Mapping[str, Any], device: str, seed: int) -> dict[str, Any]:
    n = int(shape["N"])
    if device != "meta" and not torch.cuda.is_available():
        device = "cpu"
    g = None if device == "meta" else torch.Generator(device=device).manual_seed(seed)
    x = torch.empty(n, device="meta") if device == "meta" else torch.randn(n, device=device, generator=g)
    return {"x": x, "y": torch.empty_like(x)}


def _args(t: dict[str, Any], shape: Mapping[str, Any], cfg: Mapping[str, Any]) -> dict[str, Any]:
    fault, static = cfg["FAULT"], t["x"].device.type == "meta"
    if (fault == STATIC_CRASH and static) or (fault == GPU_CRASH and not static):
        os.kill(os.getpid(), signal.SIGKILL)
    if (fault == STATIC_HANG and static) or (fault == GPU_HANG and not static):
        time.sleep(3600)
    if fault == GPU_CUDA_ERROR and not static:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    return {"out_ptr": t["y"], "in_ptr": t["x"], "n": int(shape["N"]), "BLOCK": cfg["BLOCK"], "FAULT": fault}


fault_scale = TritonKernel(
    fn=scale_kernel,
    inputs=_inputs,
    args=_args,
    grid=lambda shape, cfg: (triton.cdiv(int(shape["N"]), cfg["BLOCK"]),),
    reference=lambda t: t["x"] * 2.0,
    output="y",
    space={"BLOCK": [1024], "FAULT": list(range(6)), "num_warps": [4]},
    default={"BLOCK": 1024, "FAULT": NONE, "num_warps": 4},
    atol=1e-5,
    rtol=1e-5,
)
