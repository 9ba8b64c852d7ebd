"""Each call's GPU time from CUPTI's activity records, read through torch.profiler (Kineto): no host time enters.

The profile holds, per call, an L2 flush (torch's ``zero_`` on Triton's flush buffer, inside a
:data:`FLUSH_RANGE`) and then the call (inside a :data:`CALL_RANGE`). A call's GPU time is the summed duration of
the GPU activities (kernels, memsets, copies) between its flush and the next one, in GPU time order. Triton's
launches (driver API) carry no link to the range they were made in on every torch build (torch 2.11 left every
one of a Triton call's ranges without kernels), which is why calls are told apart by the flushes
between them. A flush is a GPU activity with a flush's name (learnt from a profile of flushes alone) that is
linked to an op inside a flush range: names alone would take a call's own ``zero_`` for a flush, and links alone
mistook most ``copy_`` calls for flushes (ids of different numberings matched). A profile whose
flushes cannot be told apart is refused (:class:`ClockUnavailable`), never guessed.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from paretotune.compat.torch import kineto_events
from paretotune.compat.triton import l2_flush_buffer

CALL_RANGE = "paretotune::call"
FLUSH_RANGE = "paretotune::flush"
GPU_ACTIVITIES = ("kernel", "gpu_memset", "gpu_memcpy")  # Kineto's activity types of work on the GPU


class ClockUnavailable(RuntimeError):
    """A GPU-side clock could not time this call (no CUPTI kernel records, a capture that failed)."""


@dataclass(frozen=True)
class Activity:
    """One record of the profile: a CPU op or range (``kind`` cpu_op, user_annotation, cuda_runtime, ...) or a
    GPU activity (``kind`` in :data:`GPU_ACTIVITIES`); ``linked``: for a GPU activity, the ``id`` of the CPU op it
    was launched under (0: none recorded)."""

    name: str
    kind: str
    start_ns: int
    end_ns: int
    id: int = 0
    linked: int = 0

    @property
    def on_gpu(self) -> bool:
        return self.kind in GPU_ACTIVITIES


def profile_calls(fn: Callable[[], Any], calls: int) -> tuple[list[Activity], set[str]]:
    """Run ``calls`` flush-then-call pairs under torch.profiler (CPU and CUDA activities) and return its records,
    with the names of a flush's GPU activities (from a short profile of flushes alone). Needs CUDA."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    cache = l2_flush_buffer()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as alone:
        for _ in range(2):
            cache.zero_()
        torch.cuda.synchronize()
    flush_names = {a.name for a in map(activity, kineto_events(alone)) if a.on_gpu}
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            with record_function(FLUSH_RANGE):
                cache.zero_()
            with record_function(CALL_RANGE):
                fn()
        torch.cuda.synchronize()
    return [activity(e) for e in kineto_events(prof)], flush_names


def activity(event: Any) -> Activity:
    """One Kineto event as an :class:`Activity`. Its activity type where the torch build says it
    (``activity_type()``, newer than torch 2.11); else from its device: a GPU record is GPU work unless
    it is one of our ranges' GPU-side annotation."""
    from torch.autograd import DeviceType

    name = event.name()
    kind_of = getattr(event, "activity_type", None)
    if kind_of is not None:
        kind = str(kind_of())
    elif event.device_type() == DeviceType.CUDA:
        kind = "gpu_user_annotation" if name in (CALL_RANGE, FLUSH_RANGE) else "kernel"
    else:
        kind = "user_annotation" if name in (CALL_RANGE, FLUSH_RANGE) else "cpu_op"
    start = int(event.start_ns())
    end = int(event.end_ns()) if hasattr(event, "end_ns") else start + int(event.duration_ns())
    return Activity(name, kind, start, end, int(event.correlation_id()), int(event.linked_correlation_id()))


def call_times(activities: Sequence[Activity], calls: int, flush_names: set[str]) -> tuple[list[float],
                                                                                         tuple[str, ...]]:
    """Each call's GPU time in ms (the summed durations of its GPU activities, :func:`call_segments`), and the
    names of one call's activities (:func:`call_work`)."""
    segments = call_segments(activities, calls, flush_names)
    return [segment_ms(segment) for segment in segments], call_work(segments)


def segment_ms(segment: Sequence[Activity]) -> float:
    """A call's GPU time in ms: its GPU activities' summed durations."""
    return sum(a.end_ns - a.start_ns for a in segment) / 1e6


def call_work(segments: Sequence[Sequence[Activity]]) -> tuple[str, ...]:
    """The names of a call's GPU activities in GPU order, as most calls of the profile ran them: what the clock
    counts as the call (a kernel's own launch, or with it whatever else the timed function runs on the GPU)."""
    runs = Counter(tuple(a.name for a in segment) for segment in segments)
    return runs.most_common(1)[0][0] if runs else ()


def call_segments(activities: Sequence[Activity], calls: int, flush_names: set[str]) -> list[list[Activity]]:
    """Each call's GPU activities (see the module's docstring), or :class:`ClockUnavailable` saying what the
    profile held. Where the profile's links work (most flushes linked to a flush op), a flush-named activity that
    lost its link (the H200's torch 2.11: 1 or 2 of 400, 2026-12-05) is still a flush unless its link points at an
    op of a call (a call's own ``zero_``); the count (one segment per call, each with work) checks the reading."""
    flush_ids, call_ids = _ids_within(activities, FLUSH_RANGE), _ids_within(activities, CALL_RANGE)
    gpu = sorted((a for a in activities if a.on_gpu), key=lambda a: a.start_ns)
    named = [a for a in gpu if a.name in flush_names]
    flushes = {id(a) for a in named if a.linked in flush_ids}
    lost = [(i, a.linked) for i, a in enumerate(named) if id(a) not in flushes]
    if 2 * len(flushes) > calls:
        flushes |= {id(named[i]) for i, link in lost if link not in call_ids}
    segments: list[list[Activity]] = []
    after_flush = False
    for act in gpu:
        if id(act) in flushes:
            if not after_flush:  # a flush made of several activities still opens one segment
                segments.append([])
            after_flush = True
            continue
        after_flush = False
        if segments:
            segments[-1].append(act)
    worked = [segment_ms(segment) > 0 for segment in segments]
    if len(segments) == calls and all(worked):
        return segments
    where = [f"{i} ({'no link' if not link else 'a call op' if link in call_ids else 'no op of ours'})"
             for i, link in lost[:5]]
    raise ClockUnavailable(f"{len(gpu)} GPU activities, {len(flushes)} of them flushes; "
                           f"{len(segments)} flush-to-flush segments ({sum(worked)} with work) "
                           f"for {calls} calls" + (f"; flush-named activities without a flush link: {', '.join(where)}"
                                                   if where else ""))


def _ids_within(activities: Sequence[Activity], range_name: str) -> set[int]:
    """The ids of the CPU ops that started inside a range of this name (the range's own id included). Only ops
    (records with no link of their own): a CUDA API record's id is CUPTI's correlation, another numbering, and
    such ids inside the flush ranges matched the ops of calls."""
    ranges = sorted((a.start_ns, a.end_ns) for a in activities if a.name == range_name and not a.on_gpu)
    starts = [r[0] for r in ranges]
    out = set()
    for act in activities:
        if act.on_gpu or not act.id or act.linked:
            continue
        i = bisect_right(starts, act.start_ns) - 1
        if i >= 0 and act.start_ns <= ranges[i][1]:
            out.add(act.id)
    return out
