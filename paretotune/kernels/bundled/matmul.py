"""fp16 GEMM in Triton (the kernel of Triton's matmul tutorial, without the activation epilogue).

``C = A @ B`` with fp32 accumulation; programs are grouped ``GROUP_SIZE_M`` tiles along M so neighbouring
programs reuse B tiles from L2. On sm_90 Triton lowers the dot to wgmma and software-pipelines the K loop
over ``num_stages`` shared-memory buffers, so tile shape, warps and stages trade registers against shared memory.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import triton
import triton.language as tl

from paretotune.kernels.triton import TritonKernel


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tl.float16)

    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def _inputs(shape: Mapping[str, Any], device: str, seed: int) -> dict[str, Any]:
    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    if device == "meta":
        return {name: torch.empty(*size, dtype=torch.float16, device="meta")
                for name, size in (("a", (m, k)), ("b", (k, n)), ("c", (m, n)))}
    gen = torch.Generator(device=device).manual_seed(seed)
    scale = k ** -0.25  # entries of C stay O(1), where fp16 rounding is far below the tolerance
    return {"a": torch.randn(m, k, dtype=torch.float16, device=device, generator=gen) * scale,
            "b": torch.randn(k, n, dtype=torch.float16, device=device, generator=gen) * scale,
            "c": torch.empty(m, n, dtype=torch.float16, device=device)}


def _args(t: dict[str, Any], shape: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    a, b, c = t["a"], t["b"], t["c"]
    return {"a_ptr": a, "b_ptr": b, "c_ptr": c, "M": a.shape[0], "N": b.shape[1], "K": a.shape[1],
            "stride_am": a.stride(0), "stride_ak": a.stride(1), "stride_bk": b.stride(0), "stride_bn": b.stride(1),
            "stride_cm": c.stride(0), "stride_cn": c.stride(1),
            **{key: config[key] for key in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M")}}


def _grid(shape: Mapping[str, Any], config: Mapping[str, Any]) -> tuple[int, ...]:
    return (triton.cdiv(int(shape["M"]), config["BLOCK_SIZE_M"]) * triton.cdiv(int(shape["N"]),
                                                                                config["BLOCK_SIZE_N"]),)


triton_matmul = TritonKernel(
    fn=matmul_kernel,
    inputs=_inputs,
    args=_args,
    grid=_grid,
    reference=lambda t: (t["a"].float() @ t["b"].float()).to(torch.float16),
    output="c",
    # tiles up to 128x128 (at most 128 accumulators per thread with 4 warps): each compile stays under ~3 s
    space={"BLOCK_SIZE_M": [64, 128], "BLOCK_SIZE_N": [64, 128], "BLOCK_SIZE_K": [32, 64], "GROUP_SIZE_M": [1, 8],
           "num_warps": [4, 8], "num_stages": [2, 3, 4]},
    # one of the tutorial's CUDA autotune configs
    default={"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "num_warps": 4,
             "num_stages": 4},
    atol=1e-2,
    rtol=1e-2,
    shapes={"square": {"M": 4096, "N": 4096, "K": 4096}, "tall": {"M": 8192, "N": 1024, "K": 4096}},
)
