"""The host's cost per call, timed apart from the GPU clock, and bounded in time."""
from __future__ import annotations

import time

from paretotune.measure.timing import HOST_COST_CALLS, host_cost


def test_host_cost_is_the_host_s_seconds_per_call_without_waiting_for_the_device() -> None:
    waits: list[int] = []
    cost = host_cost(lambda: time.sleep(0.001), lambda: waits.append(1))
    assert 0.9 <= cost < 5  # ms per call: the 1 ms the host spends issuing it
    assert len(waits) == 6  # before each of the 5 rounds, and at the end: never inside a round


def test_a_call_that_keeps_the_host_waiting_gets_fewer_rounds_not_a_longer_hold() -> None:
    calls: list[int] = []

    def slow() -> None:  # what a candidate far slower on the GPU looks like from the host once the queue waits
        calls.append(1)
        time.sleep(0.02)

    start = time.perf_counter()
    cost = host_cost(slow, lambda: None)
    assert len(calls) == HOST_COST_CALLS  # one round (0.4 s) passed the bound: no more
    assert time.perf_counter() - start < 1.0 and cost >= 20
