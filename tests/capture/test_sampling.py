"""The capture's sampled GPU timing: which calls of a signature are timed, and the total scaled from them (the GPU
side, events around real launches, is in test_capture_gpu.py)."""
from __future__ import annotations

import pytest

from paretotune.capturing.recorder import SAMPLE_EVERY, TIME_FIRST, Recorder, Signature


def test_the_first_calls_then_one_in_every_few_are_timed_and_the_total_is_scaled() -> None:
    sig = Signature()
    timed = []
    for n in range(200):
        if sig.due():
            timed.append(n)
            sig.timed += 1
            sig.time_ms += 0.5  # every call of this signature takes 0.5 ms
        sig.calls += 1
    assert timed[:TIME_FIRST] == list(range(TIME_FIRST))
    assert timed[TIME_FIRST:] == list(range(TIME_FIRST, 200, SAMPLE_EVERY))
    assert sig.timed == len(timed) < sig.calls == 200
    assert sig.estimate_ms() == pytest.approx(100.0)
    assert Signature(calls=3).estimate_ms() == 0.0  # nothing timed: no time made up


def test_an_unknown_timing_is_refused() -> None:
    with pytest.raises(ValueError, match="timing: 'some'"):
        Recorder(timing="some")
