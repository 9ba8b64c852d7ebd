"""Layer normalization forward in Triton (the fused kernel of Triton's layer-norm tutorial).

One program per row; three loops over the row in chunks of ``BLOCK_SIZE`` (mean, variance, normalize), so the
chunk width and the warp count set how many values each thread holds. Mean and 1/std are written too.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import triton
import triton.language as tl

from paretotune.kernels.triton import TritonKernel


@triton.jit
def layer_norm_fwd_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    acc_mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc_mean += a
    mean = tl.sum(acc_mean, axis=0) / N
    acc_var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        xv = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        xv = tl.where(cols < N, xv - mean, 0.0)
        acc_var += xv * xv
    var = tl.sum(acc_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        xv = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        y = (xv - mean) * rstd * w + b
        tl.store(Y + cols, y, mask=mask)


EPS = 1e-5


def _inputs(shape: Mapping[str, Any], device: str, seed: int) -> dict[str, Any]:
    m, n = int(shape["M"]), int(shape["N"])
    dtype = getattr(torch, shape.get("dtype", "float16"))
    outputs = {"y": torch.empty(m, n, dtype=dtype, device=device),
               "mean": torch.empty(m, dtype=torch.float32, device=device),
               "rstd": torch.empty(m, dtype=torch.float32, device=device)}
    if device == "meta":
        return {**outputs, "x": torch.empty(m, n, dtype=dtype, device=device),
                "w": torch.empty(n, dtype=dtype, device=device), "b": torch.empty(n, dtype=dtype, device=device)}
    gen = torch.Generator(device=device).manual_seed(seed)
    return {**outputs, "x": torch.randn(m, n, dtype=dtype, device=device, generator=gen) * 2 + 0.5,
            "w": torch.rand(n, dtype=dtype, device=device, generator=gen) + 0.5,
            "b": torch.randn(n, dtype=dtype, device=device, generator=gen) * 0.1}


def _args(t: dict[str, Any], shape: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    return {"X": t["x"], "Y": t["y"], "W": t["w"], "B": t["b"], "Mean": t["mean"], "Rstd": t["rstd"],
            "stride": t["x"].stride(0), "N": int(shape["N"]), "eps": EPS, "BLOCK_SIZE": config["BLOCK_SIZE"]}


def _reference(t: dict[str, Any]) -> torch.Tensor:
    x = t["x"]
    return torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), t["w"].float(), t["b"].float(), EPS).to(x.dtype)


triton_layer_norm = TritonKernel(
    fn=layer_norm_fwd_kernel,
    inputs=_inputs,
    args=_args,
    grid=lambda shape, config: (int(shape["M"]),),
    reference=_reference,
    output="y",
    # at most 64 values per thread per chunk (BLOCK_SIZE / (32 · num_warps)): compiles stay near 1 s
    space={"BLOCK_SIZE": [512, 1024, 2048, 4096], "num_warps": [2, 4, 8, 16], "num_stages": [1, 2, 3]},
    # the tutorial's pick for N=4096 fp16: BLOCK_SIZE = min(65536 // 2, next_pow2(N)), num_warps = min(B // 256, 8),
    # and Triton's default num_stages
    default={"BLOCK_SIZE": 4096, "num_warps": 8, "num_stages": 3},
    atol=1e-2,
    rtol=1e-2,
    shapes={"llm": {"M": 4096, "N": 4096}, "wide": {"M": 4096, "N": 8192}},
)
