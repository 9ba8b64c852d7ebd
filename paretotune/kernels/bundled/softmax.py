"""Row-wise softmax over wide rows, one program per row: a whole row lives in registers.

With wide rows (8k-32k columns) register allocation decides spills and occupancy, so ptxas controls change
the compiled code visibly: a good demonstration kernel for static and runtime campaigns.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import triton
import triton.language as tl

from paretotune.kernels.triton import TritonKernel


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def _inputs(shape: Mapping[str, Any], device: str, seed: int) -> dict[str, Any]:
    m, n = int(shape["M"]), int(shape["N"])
    dtype = getattr(torch, shape.get("dtype", "float16"))
    if device == "meta":
        return {"x": torch.empty(m, n, dtype=dtype, device="meta"), "y": torch.empty(m, n, dtype=dtype, device="meta")}
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(m, n, dtype=dtype, device=device, generator=gen) * 4
    return {"x": x, "y": torch.empty_like(x)}


def _args(t: dict[str, Any], shape: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    n = int(shape["N"])
    return {"out_ptr": t["y"], "in_ptr": t["x"], "in_row_stride": t["x"].stride(0),
            "out_row_stride": t["y"].stride(0), "n_cols": n, "BLOCK": triton.next_power_of_2(n)}


triton_softmax = TritonKernel(
    fn=softmax_kernel,
    inputs=_inputs,
    args=_args,
    grid=lambda shape, config: (int(shape["M"]),),
    reference=lambda t: torch.softmax(t["x"].float(), dim=-1).to(t["x"].dtype),
    output="y",
    space={"num_warps": [4, 8, 16, 32], "num_stages": [1]},  # fewer warps: 256+ values/thread, slow compiles
    default={"num_warps": 4, "num_stages": 1},
    atol=1e-3,
    rtol=1e-2,
    shapes={"wide": {"M": 4096, "N": 16384}, "square": {"M": 4096, "N": 4096}},
)
