"""The shape sweep each of Helion's pretuned sm90 kernels benchmarks in its own ``main()``, as data.

``shapes: from-kernel`` in a campaign whose ``kernel.inputs`` is ``paretotune.kernels.workloads:<name>`` takes
the sweep listed here for ``<name>``: the shapes the kernel's authors time it on, in their order, with the
dimension names of :mod:`paretotune.kernels.workloads` (so a shipped heuristic is judged on every shape its
users run). The lists were written from each kernel's source (``main()`` / ``_bench_shapes()`` in
``helion-pretuned-sm90/<name>/<name>.py``, Helion 1.5); they are the sizes only, no code of the kernels.

This module imports nothing: the campaign schema reads it while parsing a file.
"""
from __future__ import annotations

from itertools import product
from typing import Any


def _label(shape: dict[str, Any]) -> str:
    """``tokens1_hidden2048``: every size, in order (flags such as ``residual`` are not sizes)."""
    return "_".join(f"{k}{v}" for k, v in shape.items() if not isinstance(v, bool))


def _named(shapes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    unique = list({_label(s): s for s in shapes}.values())  # main() de-duplicates its lists too
    return [{"name": _label(s), **s} for s in unique]


def _mn(pairs: list[tuple[int, int]]) -> list[dict[str, Any]]:
    return [{"M": m, "N": n} for m, n in pairs]


SWEEPS: dict[str, list[dict[str, Any]]] = {
    # M=4096, N=128*i for i in 2..99, then two long-context shapes
    "softmax": _named(_mn([(4096, 128 * i) for i in range(2, 100)] + [(4096, 16384), (2048, 32768)])),
    # M=4096, N=512*i for i in 2..31, then realistic hidden sizes
    "layer_norm": _named(_mn([(4096, 512 * i) for i in range(2, 32)] + [
        (2048, 3584), (8192, 4096), (8192, 5120), (8192, 7168), (2048, 8192), (4096, 16384), (1024, 36864),
        (1152, 36864)])),
    # TritonBench (2048, H), its non-power-of-two widths, realistic LLM and production shapes
    "rms_norm": _named(_mn(
        [(2048, n) for n in (1024, 2048, 4096, 8192, 16384, 32768)]
        + [(2048, n) for n in (48, 96, 127, 768, 1023, 1536, 2047, 3072, 5120, 6144)]
        + [(4096, n) for n in (3584, 4096, 5120, 7168, 8192, 12288)]
        + [(8192, 4096), (8192, 8192), (16384, 4096), (16384, 8192), (145956, 384), (380668, 512),
           (589824, 256), (1179648, 256)])),
    "vector_add": _named([{"N": 2 ** i} for i in range(19, 29)]),
    "cross_entropy": _named([{"tokens": t, "vocab": v} for t, v in [
        (2048, 32000), (4096, 32000), (8192, 32000), (8192, 128000), (16384, 128000), (32768, 128000),
        (2048, 128256), (4096, 128256), (8192, 128256), (16384, 128256), (2048, 129280), (4096, 129280),
        (8192, 129280), (2048, 151936), (4096, 151936), (8192, 151936), (2048, 152064), (4096, 152064),
        (8192, 152064), (1024, 256000), (2048, 256000)]]),
    "silu_mul_fp8": _named([{"tokens": t, "intermediate": i} for i, t in product(
        (2048, 2880, 4096, 8192, 11008, 14336), (1, 8, 32, 64, 128, 256))]),
    "dynamic_per_token_scaled_fp8_quant": _named([{"tokens": t, "hidden": h} for h, t in product(
        (2048, 4096, 5120), (1, 4, 16, 64, 256, 1024, 2048, 4096))]),
    "rms_norm_dynamic_per_token_quant": _named([{"tokens": t, "hidden": h} for h, t in product(
        (2048, 4096, 5120), (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048))]),
    # main() passes a scale upper bound and a residual (updated in place), unlike the kernel's own tests
    "rms_norm_per_block_quant": _named([{"tokens": t, "hidden": h, "group_size": 128, "scale_ub": True,
                                         "residual": True}
                                        for h, t in product((2048, 4096, 5120), (1, 8, 32, 64, 128, 256, 1024, 4096))]),
    # vLLM Qwen3 FP8 (K, N) weight shapes at M in {16, 64}
    "scaled_mm": _named([{"M": m, "K": k, "N": n} for m, (k, n) in product((16, 64), [
        (2048, 4096), (2048, 2048), (2048, 12288), (6144, 2048), (4096, 6144), (4096, 4096), (4096, 24576),
        (12288, 4096), (5120, 10240), (5120, 5120), (5120, 51200), (25600, 5120)])]),
}

WORKLOADS_MODULE = "paretotune.kernels.workloads"


def sweep_for(inputs: str | None) -> list[dict[str, Any]] | None:
    """The sweep of the pretuned kernel whose input factory is ``inputs`` (``module:attr``), or None."""
    if not inputs:
        return None
    module, _, name = inputs.rpartition(":")
    if module != WORKLOADS_MODULE or name not in SWEEPS:
        return None
    return [dict(s) for s in SWEEPS[name]]
