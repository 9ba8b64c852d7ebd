"""A CUDA-graph timing runs with Python's cyclic collector paused, and gives the caller's setting back: garbage
whose finalizer calls the CUDA API, collected inside a capture, fails the capture (tests/gpu/test_clock_gpu.py)."""
from __future__ import annotations

import gc

import pytest

from paretotune.measure.timing import bench, gc_paused


@pytest.fixture
def fake_clocks(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[bool]]:
    """Triton's two timers replaced by ones that note whether the collector was on when each ran."""
    import triton.testing

    seen: dict[str, list[bool]] = {"warm-up": [], "capture": []}

    def do_bench(fn, **_kw):  # type: ignore[no-untyped-def]
        seen["warm-up"].append(gc.isenabled())
        return [1.0]

    def do_bench_cudagraph(fn, **_kw):  # type: ignore[no-untyped-def]
        seen["capture"].append(gc.isenabled())
        return [1.0, 1.0]

    monkeypatch.setattr(triton.testing, "do_bench", do_bench)
    monkeypatch.setattr(triton.testing, "do_bench_cudagraph", do_bench_cudagraph)
    return seen


def test_the_capture_runs_with_the_collector_off_and_the_warm_up_with_it_on(fake_clocks) -> None:  # type: ignore[no-untyped-def]
    assert gc.isenabled()
    timing = bench(lambda: None, 1, 10, "cudagraph")
    assert fake_clocks == {"warm-up": [True], "capture": [False]}
    assert gc.isenabled() and timing.median_ms == 1.0


def test_a_caller_that_had_the_collector_off_keeps_it_off(fake_clocks) -> None:  # type: ignore[no-untyped-def]
    gc.disable()
    try:
        bench(lambda: None, 1, 10, "cudagraph")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_comes_back_when_the_capture_raises() -> None:
    with pytest.raises(RuntimeError), gc_paused():
        assert not gc.isenabled()
        raise RuntimeError("capture failed")
    assert gc.isenabled()
