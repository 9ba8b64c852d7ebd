"""Trustworthy GPU timing: CUDA events, L2 flushed between samples, warm-up first, medians.

On an H200 the same baseline moved 0.209 → 0.243 ms within eleven seconds, more than ACF candidates differ:
so a candidate is timed right next to a fresh baseline measurement (an A/B pair), and only the ratio to that
neighbour is comparable across the run.

Two methods. ``events`` is ``do_bench``: one CUDA event pair around each launch, L2 flushed in between. Under
~50 µs the host's launch gaps enter that figure (a 31 µs Helion RMSNorm gave p ≈ 0.8 for every arm through a
Python launch path that a direct launch resolved to 1.9 %), so such kernels are timed with ``cudagraph``:
``do_bench_cudagraph`` captures many launches in one CUDA graph and times its replays, with no host in between
(and a warm L2: the launches run back to back, as in a model's forward pass). ``auto`` picks from a first
events timing of the baseline; every arm of a shape is timed with the same method.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

TimingMethod = Literal["events", "cudagraph"]
TimingSetting = Literal["auto", "events", "cudagraph"]
SHORT_KERNEL_MS = 0.05  # below this (a first events median), ``auto`` times with CUDA graphs
GRAPH_REPLAYS = 10  # do_bench_cudagraph (triton 3.x) times this many replays of its graph


@dataclass(frozen=True)
class Timing:
    samples_ms: tuple[float, ...]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)


# Times one zero-argument launch with a method; the workers take one so tests can drive them without a GPU.
Timer = Callable[[Callable[[], Any], TimingMethod], Timing]


def bench(fn: Callable[[], Any], warmup_ms: float, rep_ms: float, method: TimingMethod = "events") -> Timing:
    """Time ``fn``; all samples kept. ``events``: ``do_bench`` (events + L2 flush per sample). ``cudagraph``:
    ``do_bench_cudagraph`` after ``warmup_ms`` of plain launches; each of its :data:`GRAPH_REPLAYS` samples is
    one replay's mean launch, and each replay lasts ``rep_ms / GRAPH_REPLAYS`` so that both methods spend about
    ``rep_ms`` measuring."""
    from triton.testing import do_bench, do_bench_cudagraph

    if method == "events":
        samples = do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="all")
    elif method == "cudagraph":
        do_bench(fn, warmup=warmup_ms, rep=1)  # warm clocks and caches like the events path does
        samples = do_bench_cudagraph(fn, rep=rep_ms / GRAPH_REPLAYS, return_mode="all")
    else:
        raise ValueError(f"unknown timing method {method!r} (expected 'events' or 'cudagraph')")
    return Timing(samples_ms=tuple(float(s) for s in samples))


def gpu_timer(warmup_ms: float, rep_ms: float) -> Timer:
    """The production :data:`Timer`: :func:`bench` with the campaign's (or validate's) warm-up and repetition."""
    return lambda fn, method: bench(fn, warmup_ms, rep_ms, method)


def choose_method(setting: TimingSetting, first_ms: float | None) -> TimingMethod:
    """The method for a shape: the setting itself, or for ``auto`` CUDA graphs when the first events median is
    under :data:`SHORT_KERNEL_MS`."""
    if setting != "auto":
        return setting
    if first_ms is None:
        raise ValueError("timing 'auto' needs a first measurement")
    return "cudagraph" if first_ms < SHORT_KERNEL_MS else "events"


def check_output(got: Any, expected: Any, atol: float, rtol: float) -> str | None:
    """None if ``got`` matches ``expected`` within tolerances; otherwise why not (NaN always fails). Either may be
    a tensor or a tuple, list or dict of them, nested: every tensor is compared, in order, and a message about
    one of several names its position (``output 1``)."""
    import torch
    from torch.utils._pytree import tree_flatten

    if got is None:
        return "kernel returned no output"
    got_leaves, got_tree = tree_flatten(got)
    want_leaves, want_tree = tree_flatten(expected)
    if len(got_leaves) != len(want_leaves):
        return f"returned {len(got_leaves)} values, expected {len(want_leaves)}"
    several = len(want_leaves) > 1
    for i, (g, e) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        where = f"output {i}: " if several else ""
        if not isinstance(e, torch.Tensor):
            if isinstance(g, torch.Tensor) or g != e:
                return f"{where}returned {g!r}, expected {e!r}"
            continue
        if not isinstance(g, torch.Tensor):
            return f"{where}returned a {type(g).__name__}, expected a tensor"
        problem = _compare(g, e, atol, rtol)
        if problem:
            return where + problem
    return None


def _compare(got: Any, expected: Any, atol: float, rtol: float) -> str | None:
    import torch

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
