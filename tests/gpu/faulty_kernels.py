"""A Triton kernel with a BUG knob: 0 correct, 1 wrong answer, 2 out-of-bounds access (faults the context).

GPU tests search BUG with the grid/random engine and check that the bad candidates are recorded as failed
while the campaign completes and the good ones are measured.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch
import triton
import triton.language as tl

from paretotune.kernels.triton import TritonKernel


@triton.jit
def scale_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr, BUG: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(in_ptr + offs, mask=mask)
    y = x * 2.0
    if BUG == 1:
        y = y + 1.0
    if BUG == 2:
        tl.store(out_ptr + offs + 1099511627776, y, mask=mask)  # 2**40 elements past the buffer: illegal address
    else:
        tl.store(out_ptr + offs, y, mask=mask)


def _inputs(shape: Mapping[str, Any], device: str, seed: int) -> dict[str, Any]:
    n = int(shape["N"])
    if device == "meta":
        return {"x": torch.empty(n, device="meta"), "y": torch.empty(n, device="meta")}
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, device=device, generator=g)
    return {"x": x, "y": torch.empty_like(x)}


faulty_scale = TritonKernel(
    fn=scale_kernel,
    inputs=_inputs,
    args=lambda t, shape, cfg: {"out_ptr": t["y"], "in_ptr": t["x"], "n": int(shape["N"]), "BLOCK": cfg["BLOCK"],
                                "BUG": cfg["BUG"]},
    grid=lambda shape, cfg: (triton.cdiv(int(shape["N"]), cfg["BLOCK"]),),
    reference=lambda t: t["x"] * 2.0,
    output="y",
    space={"BLOCK": [1024], "BUG": [0, 1, 2], "num_warps": [1, 2, 4, 8, 16]},
    default={"BLOCK": 1024, "BUG": 0, "num_warps": 4},
    atol=1e-5,
    rtol=1e-5,
)

# The same kernel without a reference: a candidate is checked against the baseline build's output instead.
faulty_scale_no_reference = dataclasses.replace(faulty_scale, reference=None)
