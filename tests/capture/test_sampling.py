"""The capture's sample of calls: which calls are keyed and timed, how counts and times are scaled from them to
every call, and that a program alternating shapes in step with the sampling rate is still counted right (the
GPU side, events around real launches, is in test_capture_gpu.py). Calls here are made through the recorder's
entry point with a real ``@triton.jit`` kernel object and CPU tensors; the launch itself is left out."""
from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
import torch
import triton
import triton.language as tl

from paretotune.capturing import SAMPLE_EVERY, TIME_FIRST
from paretotune.capturing.recorder import DRAIN_AT, Recorder
from paretotune.capturing.tally import Signature


@triton.jit
def _kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


def _no_launch(_self: Any, *_args: Any, **_kwargs: Any) -> None:
    return None


def _call(recorder: Recorder, x: Any, **kwargs: Any) -> None:
    recorder.triton_run(_kernel, _no_launch, (x, x.numel()), {"BLOCK": 64, "grid": (1,), **kwargs}, True)


def _kernel_doc(recorder: Recorder) -> dict[str, Any]:
    (doc,) = recorder.document()["kernels"]
    return doc


def test_every_call_is_counted_and_a_sample_is_keyed_and_timed() -> None:
    recorder = Recorder()
    x = torch.ones(128)
    for _ in range(400):
        _call(recorder, x)
    doc = _kernel_doc(recorder)
    assert doc["calls"] == 400  # every call counted, exactly
    assert TIME_FIRST + 20 < doc["sampled_calls"] == doc["timed_calls"] < TIME_FIRST + 80  # 16 + ~384 / 8
    (sig,) = doc["signatures"]
    assert sig["calls"] == 400 and sig["sampled_calls"] == doc["sampled_calls"]  # one signature: all its calls
    assert doc["time_ms"] == pytest.approx(sig["time_ms"]) and doc["time_ms"] > 0


def test_timing_all_keys_and_times_every_call() -> None:
    recorder = Recorder(timing="all")
    a, b = torch.ones(128), torch.ones(256)
    for n in range(100):
        _call(recorder, a if n % 4 else b)
    doc = _kernel_doc(recorder)
    assert doc["calls"] == doc["sampled_calls"] == doc["timed_calls"] == 100
    assert sorted(s["calls"] for s in doc["signatures"]) == [25, 75]


def test_a_shape_pattern_in_step_with_the_rate_is_estimated_not_aliased() -> None:
    """Shape B on every SAMPLE_EVERY-th call: sampling each SAMPLE_EVERY-th call would see only B (or never B)."""
    recorder = Recorder()
    a, b = torch.ones(128), torch.ones(512)
    total = 1600
    for n in range(total):
        _call(recorder, b if n % SAMPLE_EVERY == 0 else a)
    doc = _kernel_doc(recorder)
    counts = {s["args"]["x_ptr"]["tensor"]["shape"][0]: s["calls"] for s in doc["signatures"]}
    assert doc["calls"] == total and abs(sum(counts.values()) - total) <= 1
    assert counts[512] == pytest.approx(total / SAMPLE_EVERY, rel=0.5)  # 200 exactly; a sample of ~200 calls
    assert doc["sampled_calls"] < total / 4


def test_the_scaled_estimates() -> None:
    sig = Signature(seen=10, time_ms=5.0, timed=10)  # 10 of a kernel's 40 sampled calls, 0.5 ms each
    assert sig.estimate_calls(200, 40) == 50.0  # a quarter of the kernel's 200 calls
    assert sig.estimate_ms(200, 40) == pytest.approx(25.0)
    assert Signature(seen=3).estimate_ms(10, 3) == 0.0  # nothing timed: no time made up


def _cuda_like() -> Any:
    """A stand-in for a CUDA tensor (this machine has no GPU): what the recorder reads of one."""
    tensor = mock.MagicMock(spec=torch.Tensor, is_cuda=True, is_meta=False, dtype=torch.float32,
                            shape=torch.Size([128]))
    tensor.stride.return_value = (1,)
    tensor.get_device.return_value = 0
    tensor.data_ptr.return_value = 4096
    return tensor


class _Event:
    """A CUDA event stand-in: every launch took 0.5 ms and has finished by the time it is read."""

    made = 0

    def __init__(self, enable_timing: bool = True) -> None:
        type(self).made += 1

    def record(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: Any) -> float:
        return 0.5


def test_finished_events_are_read_early_and_recycled() -> None:
    """Events are read (never blocking) once a few are pending, so a short program's launches reuse them instead
    of creating two per timed launch; every launch's time still counts."""
    recorder = Recorder(timing="all")
    recorder._event = _Event  # what ``torch.cuda.Event`` is to the recorder
    _Event.made = 0

    def launch(_self: Any, *_args: Any, **_kwargs: Any) -> None:  # Triton's launch hooks around one launch
        recorder.launch_enter()
        recorder.launch_exit()

    tensor = _cuda_like()
    with mock.patch("torch.cuda.is_current_stream_capturing", return_value=False):
        for _ in range(300):
            recorder.triton_run(_kernel, launch, (tensor, 128), {"BLOCK": 64, "grid": (1,)}, True)
    assert _Event.made <= 2 * (DRAIN_AT + 1) < 100  # a pool of a few dozen, not two per launch (600)
    doc = _kernel_doc(recorder)
    assert doc["timed_calls"] == doc["calls"] == 300 and doc["time_ms"] == pytest.approx(150.0)


def test_a_kernel_given_its_cuda_tensors_by_keyword_is_timed_by_events_not_wall_time() -> None:
    """Liger-Kernel passes every argument by keyword: a check of the positional ones saw no CUDA tensor and
    timed its launches by wall time around the (asynchronous) call (H200, 2026-12-02)."""
    cuda_like = _cuda_like()
    recorder = Recorder()
    with mock.patch("torch.cuda.is_current_stream_capturing", return_value=False):
        recorder.triton_run(_kernel, _no_launch, (), {"x_ptr": cuda_like, "n": 128, "BLOCK": 64, "grid": (1,)}, True)
    doc = _kernel_doc(recorder)
    assert doc["timing"] == ["cuda_events"]
    assert doc["untimed_calls"] == 1  # no launch reached Triton's hooks here: counted, not timed by the wall clock


def test_an_unknown_timing_is_refused() -> None:
    with pytest.raises(ValueError, match="timing: 'some'"):
        Recorder(timing="some")


def test_the_summary_counts_sampled_calls_not_only_the_timed_ones(tmp_path: Any) -> None:
    """A sampled call on CUDA tensors whose launches Triton's hooks did not report is sampled but not timed."""
    from paretotune.capturing.writer import summary_text

    kernel = {"name": "k", "timing": ["cuda_events"], "calls": 100, "sampled_calls": 30, "timed_calls": 20}
    text = summary_text({"timing": "cuda_events", "kernels": [kernel]}, [], tmp_path)
    assert "sampled 30 of 100 calls" in text
