"""The ranking clock on a real GPU: CUPTI kernel time (torch.profiler) agrees with CUDA-graph replay on a call
long enough for both, leaves the L2 flush out, and a pretuned kernel whose module says ``use_cudagraph() ->
False`` is still ranked by a GPU-side clock, with its authors' events figure beside it."""
from __future__ import annotations

from pathlib import Path

import pytest

from paretotune.measure.timing import GPU_CLOCKS, HOST, bench, cupti_profile, gpu_timer
from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

export_for_triton(find_ptxas())

pytestmark = pytest.mark.gpu
DEVICE = "cuda:0"
RMS_NORM = Path(__file__).resolve().parents[2] / ".workloads" / "helion-pretuned-sm90" / "rms_norm" / "rms_norm.py"


def test_cupti_counts_the_call_s_kernels_and_not_the_flush() -> None:
    import torch

    x = torch.randn(1 << 24, device=DEVICE)  # 64 MiB: a copy of ~30 us, far above launch costs
    y = torch.empty_like(x)
    samples, _ = cupti_profile(lambda: y.copy_(x), 50)
    graphs = bench(lambda: y.copy_(x), 5, 20, "cudagraph")
    cupti = sorted(samples)[len(samples) // 2]
    assert len(samples) == 50 and min(samples) > 0
    # the copy alone: the 256 MB flush before each call would add ~60 us if it were counted
    assert abs(cupti / graphs.median_ms - 1) < 0.15, (cupti, graphs.median_ms)


def test_cupti_bench_and_host_cost_on_a_triton_kernel() -> None:
    from paretotune.kernels.bundled.softmax import triton_softmax
    from paretotune.kernels.triton import TritonAdapter
    from paretotune.records import Shape

    adapter = TritonAdapter("triton_softmax", triton_softmax)
    shape = Shape("s", {"M": 4096, "N": 4096})
    prepared = adapter.prepare(adapter.default_config(shape), shape, None, adapter.make_inputs(shape, DEVICE, 0))
    timing = bench(prepared.launch, 5, 20, "cupti")
    host = bench(prepared.launch, 5, 20, HOST)
    assert len(timing.samples_ms) >= 20 and timing.median_ms > 0
    assert len(host.samples_ms) == 1 and 0 < host.median_ms < 5  # a Triton launch costs microseconds on the host


@pytest.mark.skipif(not RMS_NORM.exists(), reason="needs .workloads (../shared/workloads/README.md)")
def test_a_pretuned_kernel_whose_module_says_events_is_ranked_by_a_gpu_clock(tmp_path: Path) -> None:
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter
    from paretotune.measure.arms import open_shape

    text = (f"name: c\nkernel:\n  source: {RMS_NORM}:rms_norm\n  inputs: paretotune.kernels.workloads:rms_norm\n"
            "shapes: [{name: s, M: 4096, N: 4096, dtype: bfloat16}]\nobjectives: [runtime]\n")
    campaign = campaign_from_text(text, tmp_path / "campaign.yaml")
    adapter = make_adapter(campaign)
    assert adapter.authors_timing() == "events"  # the module's use_cudagraph() says False
    arms = open_shape(adapter, campaign.shapes[0], DEVICE, 0, "auto", gpu_timer(10, 40))
    assert arms.method in GPU_CLOCKS and arms.authors_method == "events", arms.method_source
    gpu = arms.time(arms.baseline, gpu_timer(10, 40))
    authors = arms.time(arms.baseline, gpu_timer(10, 40), "events")
    assert 0 < gpu.median_ms <= authors.median_ms * 1.05  # events add the host's gaps, never remove GPU time


def test_garbage_whose_finalizer_calls_cuda_does_not_break_a_graph_timing() -> None:
    """Each call leaves a reference cycle whose finalizer calls the CUDA API (as a newer Triton's dead kernel
    unloads its module); with the collector running at every allocation, a capture it ran inside would fail."""
    import gc

    import torch

    x = torch.randn(1 << 20, device=DEVICE)
    y = torch.empty_like(x)
    finalized: list[int] = []

    class Unloads:
        def __init__(self) -> None:
            self.me = self  # a cycle: only the cyclic collector frees it

        def __del__(self) -> None:
            torch.cuda.synchronize()  # illegal inside a capture, as a module unload is
            finalized.append(1)

    def call() -> None:
        Unloads()
        y.copy_(x)

    threshold = gc.get_threshold()
    gc.set_threshold(1)
    try:
        timing = bench(call, 5, 20, "cudagraph")
    finally:
        gc.set_threshold(*threshold)
    gc.collect()
    assert timing.median_ms > 0 and finalized  # timed, and the garbage was collected after, outside the capture
