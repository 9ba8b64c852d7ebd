"""Trustworthy GPU timing: a GPU-side clock, warm-up first, medians.

The same baseline can move within seconds by more than ACF candidates differ (docs/results.md, "Drift"): so
a candidate is timed right next to a fresh baseline measurement (an A/B pair), and only the ratio to that
neighbour is comparable across the run.

The ranking clock never includes the host. ``events`` (``do_bench``: an event pair around each launch) counts
whatever the host does between the two events, so CPU load beside a short call moves its speedups; the two
GPU-side clocks do not see the host (``benchmarks/bench_clock_under_load.py`` measures all three). So ``auto``
ranks with one of those:

- ``cudagraph``: ``do_bench_cudagraph`` captures many launches in one CUDA graph and times its replays (warm L2,
  launches back to back as in a model's forward pass): for short calls, under :data:`SHORT_KERNEL_MS` of GPU time;
- ``cupti``: the kernels' own execution time as CUPTI records it (torch.profiler, which every torch ships; no
  extra package), summed per call, L2 flushed before each call as ``do_bench`` does: for longer calls, and for a
  short call that a CUDA graph cannot capture (a host sync inside).

``events`` is used only where neither GPU clock works, and is then labelled so. What the host adds per call (the
eager cost a user of the kernel also pays: dispatch, tensor-descriptor setup) is a figure of its own,
:func:`host_cost`, never part of the ranking clock.
"""
from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

TimingMethod = Literal["events", "cudagraph", "cupti"]
HOST: Literal["host"] = "host"  # a Timer's pseudo-method: the host's ms per call (:func:`host_cost`), not a clock
TimingSetting = Literal["auto", "events", "cudagraph", "cupti"]
GPU_CLOCKS: tuple[TimingMethod, ...] = ("cudagraph", "cupti")  # the methods no host time can enter
SHORT_KERNEL_MS = 0.05  # below this GPU time (a first CUPTI median), ``auto`` times with CUDA graphs
GRAPH_REPLAYS = 10  # do_bench_cudagraph (triton 3.x) times this many replays of its graph
CUPTI_MAX_CALLS = 400  # per timing: enough for a median, and the profiler's trace stays small to read
CUPTI_PROBE_CALLS = 20  # the fewest calls a CUPTI timing profiles (a long call's rep_ms may fit fewer)
CUPTI_PROFILES = 3  # profiles a CUPTI timing takes before it refuses: on the H200 one profile of 400 calls of a
# 79 us Helion softmax kept 399 flushes (2026-12-05), which stopped that campaign at its baseline
HOST_COST_CALLS = 20  # launches per host-cost round (far below the launch queue's depth)
HOST_COST_ROUNDS = 5
HOST_COST_MAX_S = 0.25  # no more rounds after this: a candidate far slower on the GPU waits out each round's sync


@dataclass(frozen=True)
class Timing:
    samples_ms: tuple[float, ...]
    call_work: tuple[str, ...] = ()  # CUPTI only: the GPU activities of one timed call, by name, in GPU order

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)


# Times one zero-argument launch with a method (or :data:`HOST`); the workers take one so tests can drive them
# without a GPU.
Timer = Callable[[Callable[[], Any], TimingMethod | Literal["host"]], Timing]


def bench(fn: Callable[[], Any], warmup_ms: float, rep_ms: float,
          method: TimingMethod | Literal["host"] = "events") -> Timing:
    """Time ``fn``; all samples kept. ``events``: ``do_bench`` (events + L2 flush per sample). ``cudagraph``:
    ``do_bench_cudagraph`` after ``warmup_ms`` of plain launches; each of its :data:`GRAPH_REPLAYS` samples is
    one replay's mean launch, and each replay lasts ``rep_ms / GRAPH_REPLAYS`` so that both methods spend about
    ``rep_ms`` measuring. ``cupti``: :func:`cupti_profile` after the same warm-up, as many calls as fit ``rep_ms``
    (at most :data:`CUPTI_MAX_CALLS`). :data:`HOST`: one sample, :func:`host_cost`."""
    from triton.testing import do_bench, do_bench_cudagraph

    work: tuple[str, ...] = ()  # CUPTI's reading names the call's GPU activities; the other clocks cannot
    if method == HOST:
        import torch

        return Timing(samples_ms=(host_cost(fn, torch.cuda.synchronize),))
    if method == "events":
        samples = do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="all")
    elif method == "cudagraph":
        do_bench(fn, warmup=warmup_ms, rep=1)  # warm clocks and caches like the events path does
        with gc_paused():
            samples = do_bench_cudagraph(fn, rep=rep_ms / GRAPH_REPLAYS, return_mode="all")
    elif method == "cupti":
        first = do_bench(fn, warmup=warmup_ms, rep=1, return_mode="min")  # warm-up; an upper bound of a call
        calls = max(CUPTI_PROBE_CALLS, min(CUPTI_MAX_CALLS, int(rep_ms / max(float(first), 1e-3))))
        samples, work = cupti_profile(fn, calls)
    else:
        raise ValueError(f"unknown timing method {method!r} (expected 'events', 'cudagraph' or 'cupti')")
    return Timing(samples_ms=tuple(float(s) for s in samples), call_work=work)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a CUDA-graph capture. The collector may run inside a capture and
    finalize garbage of earlier work; a finalizer that calls the CUDA API there fails the capture ("operation failed
    due to a previous error during capture"), and a sound candidate, or a whole re-timing, is lost to garbage it does
    not own. Triton 3.9's kernels unload their modules when finalized and its ``do_bench_cudagraph`` pauses the
    collector for that reason; with Triton 3.6 the failure was seen on the H200 and the H100 (rare, on candidates
    with and without an ACF, gone when the same re-timing ran again), the finalizer not identified. The garbage is
    collected after, outside the capture."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def cupti_profile(fn: Callable[[], Any], calls: int) -> tuple[list[float], tuple[str, ...]]:
    """Each call's GPU time in ms: what its kernels took on the GPU as CUPTI records them (torch.profiler), L2
    flushed before each call (Triton's own flush buffer, as ``do_bench`` does) and the flush not counted
    (:mod:`paretotune.measure.cupti`); and the names of the GPU activities one call ran
    (:func:`~paretotune.measure.cupti.call_times`). Raises :class:`~paretotune.measure.cupti.ClockUnavailable`
    where the records cannot say."""
    from paretotune.measure.cupti import ClockUnavailable, profile_calls, call_times

    refused: list[str] = []
    for _ in range(CUPTI_PROFILES):
        activities, flush_names = profile_calls(fn, calls)
        try:
            return call_times(activities, calls, flush_names)
        except ClockUnavailable as exc:
            refused.append(str(exc))
    raise ClockUnavailable(f"{CUPTI_PROFILES} profiles refused: {'; '.join(dict.fromkeys(refused))}")


def host_cost(fn: Callable[[], Any], sync: Callable[[], None], calls: int = HOST_COST_CALLS,
              rounds: int = HOST_COST_ROUNDS) -> float:
    """The host's seconds per call in ms: the time to issue ``calls`` launches back to back, without waiting
    for the GPU (a call that syncs inside pays its GPU time here too), the median of ``rounds`` (fewer once
    :data:`HOST_COST_MAX_S` have passed: each round first waits for the last one's launches). What an eager
    user of the kernel pays on the CPU per call: Helion's dispatch, tensor-descriptor setup, argument checks.
    Timed apart from the ranking clock, so it can never pose as a GPU speedup."""
    figures: list[float] = []
    began = time.perf_counter()
    for _ in range(rounds):
        if figures and time.perf_counter() - began > HOST_COST_MAX_S:
            break
        sync()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        figures.append((time.perf_counter() - start) * 1000.0 / calls)
    sync()
    return statistics.median(figures)


def gpu_timer(warmup_ms: float, rep_ms: float) -> Timer:
    """The production :data:`Timer`: :func:`bench` with the campaign's (or validate's) warm-up and repetition."""
    return lambda fn, method: bench(fn, warmup_ms, rep_ms, method)


def choose_method(setting: TimingSetting, first_gpu_ms: float | None) -> TimingMethod:
    """The method for a shape: the setting itself, or for ``auto`` CUDA graphs when the first GPU-side
    (CUPTI) median is under :data:`SHORT_KERNEL_MS`, else CUPTI."""
    if setting != "auto":
        return setting
    if first_gpu_ms is None:
        raise ValueError("timing 'auto' needs a first measurement")
    return "cudagraph" if first_gpu_ms < SHORT_KERNEL_MS else "cupti"


def check_output(got: Any, expected: Any, atol: float, rtol: float) -> str | None:
    """None if ``got`` matches ``expected`` within tolerances; otherwise why not (NaN always fails). Either may be
    a tensor or a tuple, list or dict of them, nested: every tensor is compared, in order, and a message about
    one of several names its position (``output 1``)."""
    import torch

    from paretotune.compat.torch import tree_flatten

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
