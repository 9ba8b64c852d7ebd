"""Input factories for Helion's pretuned sm90 kernels (``.workloads/helion-pretuned-sm90``, never committed).

Each factory is ``(shape, device, seed) -> args`` for the kernel of the same name, named in a campaign as
``kernel.inputs: paretotune.kernels.workloads:<name>``. Shapes use the dimension names of the kernel's own
benchmark (its ``main()``); dtypes are the ones that benchmark uses (overridable with ``dtype``). Inputs are
seeded random values, never zeros; with ``device="meta"`` only shapes matter (no memory is touched).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

FP8 = torch.float8_e4m3fn


def _rng(device: str, seed: int) -> torch.Generator | None:
    return None if device == "meta" else torch.Generator(device=device).manual_seed(seed)


def _randn(shape: tuple[int, ...], dtype: torch.dtype, device: str, gen: torch.Generator | None,
           scale: float = 1.0) -> torch.Tensor:
    if device == "meta":
        return torch.empty(shape, dtype=dtype, device="meta")
    return (torch.randn(shape, device=device, generator=gen, dtype=torch.float32) * scale).to(dtype)


def _dtype(shape: Mapping[str, Any], default: str) -> torch.dtype:
    return getattr(torch, str(shape.get("dtype", default)))


def softmax(shape: Mapping[str, Any], device: str, seed: int) -> tuple[Any, ...]:
    """x [M, N] (fp16)."""
    gen = _rng(device, seed)
    return (_randn((int(shape["M"]), int(shape["N"])), _dtype(shape, "float16"), device, gen, 4.0),)


def rms_norm(shape: Mapping[str, Any], device: str, seed: int) -> tuple[Any, ...]:
    """x [M, N], weight [N] (bf16)."""
    gen, dtype = _rng(device, seed), _dtype(shape, "bfloat16")
    m, n = int(shape["M"]), int(shape["N"])
    return _randn((m, n), dtype, device, gen), _randn((n,), dtype, device, gen)


def layer_norm(shape: Mapping[str, Any], device: str, seed: int) -> tuple[Any, ...]:
    """x [M, N], weight [N], bias [N] (fp16)."""
    gen, dtype = _rng(device, seed), _dtype(shape, "float16")
    m, n = int(shape["M"]), int(shape["N"])
    return _randn((m, n), dtype, device, gen), _randn((n,), dtype, device, gen), _randn((n,), dtype, device, gen)


def vector_add(shape: Mapping[str, Any], device: str, seed: int) -> tuple[Any, ...]:
    """x [N], y [N] (fp32)."""
    gen, dtype = _rng(device, seed), _dtype(shape, "float32")
    n = int(shape["N"])
    return _randn((n,), dtype, device, gen), _randn((n,), dtype, device, gen)


def cross_entropy(shape: Mapping[str, Any], device: str, seed: int) -> tuple[Any, ...]:
    """logits [tokens, vocab] (bf16), labels [tokens] (int64 in [0, vocab))."""
    gen = _rng(device, seed)
    tokens, vocab = int(shape["tokens"]), int(shape["vocab"])
    logits = _randn((tokens, vocab), _dtype(shape, "bfloat16"), device, gen)
    if device == "meta":
        labels = torch.empty((tokens,), dtype=torch.int64, device="meta")
    else:
        labels = torch.randint(0, vocab, (tokens,), device=device, generator=gen, dtype=torch.int64)
    return logits, labels


def silu_mul_fp8(shape: Mapping[str, Any], device: str, seed: int) -> tuple[Any, ...]:
    """input [tokens, 2 * intermediate] (bf16), scale [1] (fp32, 1.0)."""
    gen = _rng(device, seed)
    tokens, inter = int(shape["tokens"]), int(shape["intermediate"])
    scale = torch.ones((1,), dtype=torch.float32, device=device)
    return _randn((tokens, 2 * inter), _dtype(shape, "bfloat16"), device, gen), scale


def _empty(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device=device)


def dynamic_per_token_scaled_fp8_quant(shape: Mapping[str, Any], device: str, seed: int) -> tuple[Any, ...]:
    """result [tokens, hidden] (fp8, written), input [tokens, hidden] (bf16), scale [tokens, 1] (fp32, written)."""
    gen = _rng(device, seed)
    tokens, hidden = int(shape["tokens"]), int(shape["hidden"])
    x = _randn((tokens, hidden), _dtype(shape, "bfloat16"), device, gen)
    return _empty((tokens, hidden), FP8, device), x, _empty((tokens, 1), torch.float32, device)


def rms_norm_dynamic_per_token_quant(shape: Mapping[str, Any], device: str, seed: int) -> tuple[Any, ...]:
    """result (fp8, written), input [tokens, hidden] (bf16), weight [hidden] (~N(1, 1)), scale [tokens, 1]
    (written), epsilon."""
    gen, dtype = _rng(device, seed), _dtype(shape, "bfloat16")
    tokens, hidden = int(shape["tokens"]), int(shape["hidden"])
    x = _randn((tokens, hidden), dtype, device, gen)
    weight = _randn((hidden,), dtype, device, gen)
    if device != "meta":
        weight = weight + 1
    return (_empty((tokens, hidden), FP8, device), x, weight, _empty((tokens, 1), torch.float32, device),
            float(shape.get("epsilon", 1e-6)))


def rms_norm_per_block_quant(shape: Mapping[str, Any], device: str, seed: int) -> tuple[Any, ...]:
    """result (fp8, written), input [tokens, hidden] (bf16), weight [hidden], scale [tokens, hidden / group]
    (written), epsilon, scale_ub, residual, group_size, scale not transposed. ``scale_ub: true`` passes the
    input's mean as the upper bound and ``residual: true`` a random residual (updated in place), as the kernel's
    ``main()`` does; by default both are None."""
    gen, dtype = _rng(device, seed), _dtype(shape, "bfloat16")
    tokens, hidden, group = int(shape["tokens"]), int(shape["hidden"]), int(shape["group_size"])
    x = _randn((tokens, hidden), dtype, device, gen)
    weight = _randn((hidden,), dtype, device, gen)
    scale = _empty((tokens, hidden // group), torch.float32, device)
    scale_ub = residual = None
    if shape.get("scale_ub", False):
        scale_ub = _empty((), torch.float32, device) if device == "meta" else x.float().mean()
    if shape.get("residual", False):
        residual = _randn((tokens, hidden), dtype, device, gen)
    return (_empty((tokens, hidden), FP8, device), x, weight, scale, float(shape.get("epsilon", 1e-6)), scale_ub,
            residual, group, False)


def scaled_mm(shape: Mapping[str, Any], device: str, seed: int) -> tuple[Any, ...]:
    """c [M, N] (bf16, written), a [M, K] fp8, b [K, N] fp8 (column-major, as a transposed [N, K]), per-tensor
    scales [1, 1], bias [N]."""
    gen = _rng(device, seed)
    m, k, n = int(shape["M"]), int(shape["K"]), int(shape["N"])
    out = _dtype(shape, "bfloat16")
    if device == "meta":
        a = torch.empty((m, k), dtype=FP8, device="meta")
        b = torch.empty((n, k), dtype=FP8, device="meta").t()
        # two tensors, as on the GPU: one meta tensor for both made Helion generate code for aliased scales
        sa, sb = (torch.empty((1, 1), dtype=torch.float32, device="meta") for _ in range(2))
        bias = torch.empty((n,), dtype=out, device="meta")
    else:
        s = k ** -0.5
        a = (s * (0.5 + torch.rand((m, k), device=device, generator=gen))).to(FP8)
        b = (s * (0.5 + torch.rand((n, k), device=device, generator=gen))).to(FP8).t()
        sa = torch.rand((1, 1), device=device, generator=gen) + 0.5
        sb = torch.rand((1, 1), device=device, generator=gen) + 0.5
        bias = (torch.rand((n,), device=device, generator=gen) - 0.5).to(out) * 0.5
    return _empty((m, n), out, device), a, b, sa, sb, bias


def rope_fwd(shape: Mapping[str, Any], device: str, seed: int) -> tuple[Any, ...]:
    """q [1, 32, seq, hidden / 32], k [1, 8, seq, hidden / 32] (bf16), cos and sin [1, seq, hidden / 32]: the
    kernel returns (q_out, k_out). Its heuristic is keyed by (hidden, seq)."""
    gen, dtype = _rng(device, seed), _dtype(shape, "bfloat16")
    hidden, seq = int(shape["hidden"]), int(shape["seq"])
    head_dim = hidden // 32
    q = _randn((1, 32, seq, head_dim), dtype, device, gen)
    k = _randn((1, 8, seq, head_dim), dtype, device, gen)
    angles = _randn((1, seq, head_dim), dtype, device, gen)
    if device == "meta":
        return q, k, angles, torch.empty_like(angles)
    return q, k, torch.cos(angles), torch.sin(angles)


def fused_qk_norm_rope(shape: Mapping[str, Any], device: str, seed: int) -> tuple[Any, ...]:
    """qkv [tokens, (q_heads + 2 kv_heads) * 128] (bf16, updated in place: the kernel returns None), the head
    counts, head_dim 128, eps, q and k weights [128] (~U(0.8, 1.2)), a cos/sin cache [40960, 128], NeoX layout,
    positions 0..tokens-1 (indices: in range by construction)."""
    gen, dtype = _rng(device, seed), _dtype(shape, "bfloat16")
    tokens, q_heads, kv_heads, head_dim = int(shape["tokens"]), int(shape["q_heads"]), int(shape["kv_heads"]), 128
    qkv = _randn((tokens, (q_heads + 2 * kv_heads) * head_dim), dtype, device, gen, 0.05)
    if device == "meta":
        weights = [torch.empty(head_dim, dtype=dtype, device="meta") for _ in range(2)]
        cache = torch.empty((40960, head_dim), dtype=dtype, device="meta")
        positions = torch.empty(tokens, dtype=torch.long, device="meta")
    else:
        weights = [(0.8 + 0.4 * torch.rand(head_dim, device=device, generator=gen)).to(dtype) for _ in range(2)]
        freqs = torch.arange(40960, device=device, dtype=torch.float32)[:, None] * (
            10000.0 ** (-torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
        cache = torch.cat((freqs.cos(), freqs.sin()), dim=-1).to(dtype)
        positions = torch.arange(tokens, dtype=torch.long, device=device)
    return qkv, q_heads, kv_heads, kv_heads, head_dim, 1e-6, weights[0], weights[1], cache, True, positions


# Kernels that return None write into arguments: which ones the correctness check compares.
dynamic_per_token_scaled_fp8_quant.outputs = (0, 2)  # type: ignore[attr-defined]
rms_norm_dynamic_per_token_quant.outputs = (0, 3)  # type: ignore[attr-defined]
rms_norm_per_block_quant.outputs = (0, 3)  # type: ignore[attr-defined]
scaled_mm.outputs = (0,)  # type: ignore[attr-defined]

# fp8 outputs are compared as the kernels' own benchmarks compare them (atol = rtol = 0.2)
TOLERANCES: dict[str, float] = {"dynamic_per_token_scaled_fp8_quant": 0.2, "rms_norm_dynamic_per_token_quant": 0.2,
                                "rms_norm_per_block_quant": 0.2, "silu_mul_fp8": 0.2, "scaled_mm": 0.05}

# Where a kernel is defined in the workload folder when not as <name>/<name>.py:<name>
WORKLOAD_SOURCES: dict[str, str] = {"rope_fwd": "rope/rope.py:rope_fwd"}

# The kernels, a factory each, and 1-2 of the shapes their own main() benchmarks (dimension names as above).
WORKLOAD_SHAPES: dict[str, list[dict[str, Any]]] = {
    "softmax": [{"M": 4096, "N": 16384}, {"M": 2048, "N": 32768}],
    "rms_norm": [{"M": 4096, "N": 4096}, {"M": 2048, "N": 16384}],
    "layer_norm": [{"M": 8192, "N": 4096}, {"M": 2048, "N": 8192}],
    "vector_add": [{"N": 2 ** 24}, {"N": 2 ** 22}],
    "cross_entropy": [{"tokens": 4096, "vocab": 32000}, {"tokens": 2048, "vocab": 128256}],
    "silu_mul_fp8": [{"tokens": 4096, "intermediate": 14336}, {"tokens": 256, "intermediate": 14336}],
    "dynamic_per_token_scaled_fp8_quant": [{"tokens": 4096, "hidden": 4096}, {"tokens": 1024, "hidden": 5120}],
    "rms_norm_dynamic_per_token_quant": [{"tokens": 4096, "hidden": 4096}, {"tokens": 2048, "hidden": 5120}],
    "rms_norm_per_block_quant": [{"tokens": 4096, "hidden": 4096, "group_size": 128},
                                 {"tokens": 1024, "hidden": 5120, "group_size": 128}],
    "scaled_mm": [{"M": 2048, "K": 4096, "N": 4096}, {"M": 2048, "K": 4096, "N": 6144}],
    "rope_fwd": [{"hidden": 8192, "seq": 1024}, {"hidden": 2048, "seq": 2048}],
    "fused_qk_norm_rope": [{"tokens": 2048, "q_heads": 32, "kv_heads": 8}, {"tokens": 128, "q_heads": 16,
                                                                           "kv_heads": 8}],
}
