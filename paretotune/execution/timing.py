"""Trustworthy GPU timing: CUDA events, L2 flushed between samples, warm-up first, medians.

On an H200 the same baseline moved 0.209 → 0.243 ms within eleven seconds, more than ACF candidates differ:
so a candidate is timed right next to a fresh baseline measurement (an A/B pair), and only the ratio to that
neighbour is comparable across the run.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Timing:
    samples_ms: tuple[float, ...]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)


def bench(fn: Callable[[], Any], warmup_ms: float, rep_ms: float) -> Timing:
    """Time ``fn`` with ``triton.testing.do_bench`` (events + L2 flush per sample); all samples kept."""
    from triton.testing import do_bench

    samples = do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="all")
    return Timing(samples_ms=tuple(float(s) for s in samples))


def check_output(got: Any, expected: Any, atol: float, rtol: float) -> str | None:
    """None if ``got`` matches ``expected`` within tolerances; otherwise why not (NaN always fails)."""
    import torch

    if got is None:
        return "kernel returned no output"
    if got.shape != expected.shape:
        return f"wrong shape {tuple(got.shape)} != {tuple(expected.shape)}"
    g, e = got.float(), expected.float()
    if torch.isnan(g).any() and not torch.isnan(e).any():
        return f"NaN in output ({int(torch.isnan(g).sum())} elements; unwritten or invalid)"
    err = (g - e).abs()
    bad = err > atol + rtol * e.abs()
    if bool(bad.any()):
        return (f"wrong answer: {int(bad.sum())} of {bad.numel()} elements off, max abs error "
                f"{float(err.max()):.3g} (atol {atol}, rtol {rtol})")
    return None
