"""Measurement truth on the CPU: the search worker's ``measure`` and validate's ``validate_shape`` run their real
arm/buffer logic on CPU tensors, with an adapter that computes ``y = x * scale + bias`` in torch and a timer
injected in place of the GPU one.

The adapter records the data pointers every launch actually reads and writes, and whether the launch happened
inside the timer, so the tests see which buffers each arm was timed on and which ones it was checked on.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import torch

from paretotune.campaign.schema import EvaluationSpec
from paretotune.measure.arms import check_candidate, open_shape
from paretotune.measure.gpu_worker import GpuJob, measure
from paretotune.measure.cupti import ClockUnavailable
from paretotune.measure.timing import HOST, Timing, TimingMethod, choose_method
from paretotune.validate.worker import CONTROL_ID, validate_shape
from paretotune.kernels.base import Inputs, Prepared
from paretotune.records import Shape

SHAPES = [Shape("small", {"N": 256}), Shape("large", {"N": 4096})]


class ScaleAdapter:
    """A kernel adapter on CPU tensors: config ``scale`` and ``bias`` (bias != 0 is a wrong answer)."""

    name = "scale"

    def __init__(self, with_reference: bool = True) -> None:
        self.with_reference = with_reference
        self.launches: list[dict[str, Any]] = []  # every launch: config, pointers, inside the timer or not
        self.in_timer = False

    def space(self) -> dict[str, list[Any]]:
        return {"scale": [2.0], "bias": [0.0, 1.0], "num_warps": [4, 8]}

    def default_config(self, shape: Shape) -> dict[str, Any]:
        return {"scale": 2.0, "bias": 0.0, "num_warps": 4}

    def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(int(shape.params["N"]), generator=g, device=device)
        return {"x": x, "y": torch.empty_like(x)}

    def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
        x, y = inputs["x"], inputs["y"]

        def launch() -> torch.Tensor:
            self.launches.append({"shape": shape.label, "config": dict(config), "acf": acf, "timed": self.in_timer,
                                  "ptrs": (x.data_ptr(), y.data_ptr()), "x0": float(x[0])})
            torch.mul(x, config["scale"], out=y)
            y.add_(config["bias"])
            return y

        reference = (lambda: x * 2.0) if self.with_reference else None
        return Prepared(launch=launch, reference=reference, atol=1e-6, rtol=1e-6, kernel_name="scale",
                        inputs=inputs, output=y)

    def timed(self, shape: str) -> list[dict[str, Any]]:
        return [launch for launch in self.launches if launch["timed"] and launch["shape"] == shape]

    def checked(self, shape: str) -> list[dict[str, Any]]:
        return [launch for launch in self.launches if not launch["timed"] and launch["shape"] == shape]


def fixed_timer(adapter: ScaleAdapter, first_ms: float = 0.2,
                calls: list[TimingMethod] | None = None) -> Callable[[Callable[[], Any], TimingMethod], Timing]:
    """Launches ``fn`` three times (as a benchmark would) and reports ``first_ms`` per launch: no clocks read."""

    def timer(fn: Callable[[], Any], method: TimingMethod) -> Timing:
        adapter.in_timer = True
        try:
            for _ in range(3):
                fn()
        finally:
            adapter.in_timer = False
        if calls is not None:
            calls.append(method)
        return Timing(samples_ms=(first_ms, first_ms, first_ms))

    return timer


def cpu_evaluation(**update: Any) -> EvaluationSpec:
    return EvaluationSpec().model_copy(update={"device": "cpu", **update})  # the schema accepts only CUDA devices


JOBS = [GpuJob(1, {"scale": 2.0, "bias": 0.0, "num_warps": 8}, "/acfs/a.acf", seed=101),
        GpuJob(2, {"scale": 2.0, "bias": 0.0, "num_warps": 4}, "/acfs/b.acf", seed=102),
        GpuJob(3, {"scale": 2.0, "bias": 0.0, "num_warps": 8}, None, seed=103)]


def test_search_times_baseline_and_every_candidate_on_one_buffer_set_per_shape() -> None:
    adapter = ScaleAdapter()
    baselines: dict = {}
    for job in JOBS:
        result = measure(adapter, SHAPES, job, baselines, cpu_evaluation(), timer=fixed_timer(adapter))
        assert set(result) == {"small", "large"}
    ptrs_by_shape = {}
    for shape in ("small", "large"):
        timed = adapter.timed(shape)
        # baseline (no ACF, default) and every job's build were timed, each on the same tensors
        assert {launch["acf"] for launch in timed} == {None, Path("/acfs/a.acf"), Path("/acfs/b.acf")}
        assert len({launch["ptrs"] for launch in timed}) == 1
        ptrs_by_shape[shape] = timed[0]["ptrs"]
        # correctness ran once per candidate on inputs of its own seed (its other untimed launch is the warm-up
        # on the timing buffers; a freed check set may come back at the same address, so values tell them apart)
        for job in JOBS:
            acf = Path(job.acf_path) if job.acf_path else None
            mine = [c for c in adapter.checked(shape) if c["config"] == job.config and c["acf"] == acf]
            checks = [c for c in mine if c["x0"] != timed[0]["x0"]]
            assert len(mine) == 2 and len(checks) == 1
            assert checks[0]["x0"] == float(adapter.make_inputs(SHAPES[0] if shape == "small" else SHAPES[1],
                                                                "cpu", job.seed)["x"][0])
    assert ptrs_by_shape["small"] != ptrs_by_shape["large"]


def test_search_checks_before_timing_and_a_wrong_candidate_is_never_timed() -> None:
    adapter = ScaleAdapter()
    wrong = GpuJob(9, {"scale": 2.0, "bias": 1.0, "num_warps": 4}, "/acfs/w.acf", seed=109)
    result = measure(adapter, SHAPES, wrong, {}, cpu_evaluation(), timer=fixed_timer(adapter))
    assert "failed" in result and result["failed"].startswith("small: wrong answer")
    assert not adapter.timed("small") and not adapter.timed("large")


@pytest.mark.parametrize("with_reference", [True, False])
def test_correctness_uses_the_reference_or_else_the_baseline_output(with_reference: bool) -> None:
    adapter = ScaleAdapter(with_reference=with_reference)
    shape = SHAPES[0]
    same = {"scale": 2.0, "bias": 0.0, "num_warps": 8}
    assert check_candidate(adapter, same, shape, None, "cpu", seed=5) is None
    problem = check_candidate(adapter, {**same, "bias": 1.0}, shape, None, "cpu", seed=5)
    assert problem is not None and problem.startswith("wrong answer: 256 of 256 elements off")
    baseline_runs = [launch for launch in adapter.launches if launch["config"] == adapter.default_config(shape)]
    # without a reference the baseline ran, on the candidate's fresh inputs (twice per check: once as it is, once
    # on a NaN-poisoned output, which shows its output buffer is write-only); with one it never ran
    assert len(baseline_runs) == (0 if with_reference else 4)
    if not with_reference:
        cand_runs = [launch for launch in adapter.launches if launch["config"] != adapter.default_config(shape)]
        assert [b["ptrs"] for b in baseline_runs] == [c["ptrs"] for c in cand_runs for _ in range(2)]


def test_the_default_reference_catches_a_different_output_and_unwritten_elements() -> None:
    class Partial(ScaleAdapter):
        def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
            prepared = super().prepare(config, shape, acf, inputs)
            if config["num_warps"] != 8:
                return prepared

            def half() -> torch.Tensor:  # writes only the first half of the output
                torch.mul(inputs["x"][:128], 2.0, out=inputs["y"][:128])
                return inputs["y"]

            return Prepared(launch=half, reference=None, atol=1e-6, rtol=1e-6, kernel_name="scale", inputs=inputs,
                            output=inputs["y"])

    adapter = Partial(with_reference=False)
    problem = check_candidate(adapter, {"scale": 2.0, "bias": 0.0, "num_warps": 8}, SHAPES[0], None, "cpu", seed=5)
    assert problem == "NaN in output (128 elements; unwritten or invalid)"


def test_an_output_buffer_that_already_holds_the_baselines_answer_is_still_its_output() -> None:
    """A reused allocation can hold the very values the baseline writes: its write then changes nothing, and a
    candidate a rounding apart must not read as writing into an argument the baseline only reads."""
    class Stale(ScaleAdapter):
        def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
            inputs = super().make_inputs(shape, device, seed)
            inputs["y"].copy_(inputs["x"] * 2.0)
            return inputs

    adapter = Stale(with_reference=False)
    near = {"scale": 2.000001, "bias": 0.0, "num_warps": 8}
    assert check_candidate(adapter, near, SHAPES[0], None, "cpu", seed=5) is None
    far = check_candidate(adapter, {**near, "scale": 2.1}, SHAPES[0], None, "cpu", seed=5)
    assert far is not None and far.startswith("wrong answer: ")
    assert open_shape(adapter, SHAPES[0], "cpu", 5, "events", fixed_timer(adapter)).written == [1]


def test_validate_times_baseline_control_and_candidates_on_the_same_buffers() -> None:
    adapter = ScaleAdapter(with_reference=False)
    cands = [{"candidate_id": 4, "config": {"scale": 2.0, "bias": 0.0, "num_warps": 8}, "acf_path": "/acfs/a.acf"},
             {"candidate_id": 5, "config": {"scale": 2.0, "bias": 1.0, "num_warps": 8}, "acf_path": "/acfs/b.acf"}]
    result = validate_shape(adapter, SHAPES[1], cands, rounds=4, seed=0, device="cpu", setting="events",
                            timer=fixed_timer(adapter), rng=random.Random(0))
    assert set(result["samples"]) == {"baseline", str(CONTROL_ID), "4"}
    assert all(len(v) == 4 for v in result["samples"].values())
    assert result["errors"]["5"].startswith("wrong answer")
    assert result["timing"] == "events" and result["buffers"] == "shared"
    timed = adapter.timed("large")
    # three arms, four rounds, three launches per timing; then each arm's host cost once, apart from the rounds
    assert len(timed) == 3 * 4 * 3 + 3 * 3
    assert set(result["host_ms"]) == {"baseline", str(CONTROL_ID), "4"}
    assert len({launch["ptrs"] for launch in timed}) == 1
    checks = [c for c in adapter.checked("large") if c["acf"] is not None and c["x0"] != timed[0]["x0"]]
    assert len(checks) == 2  # each candidate once, on inputs of its own seed (cand 5 failed there)
    first_timed = adapter.launches.index(timed[0])
    assert all(adapter.launches.index(c) < first_timed for c in checks)  # checked before any arm is timed


def test_validate_own_buffers_gives_each_arm_its_own_tensors() -> None:
    adapter = ScaleAdapter()
    cands = [{"candidate_id": 4, "config": {"scale": 2.0, "bias": 0.0, "num_warps": 8}, "acf_path": None}]
    result = validate_shape(adapter, SHAPES[1], cands, rounds=2, seed=0, device="cpu", setting="events",
                            timer=fixed_timer(adapter), rng=random.Random(0), own_buffers=True)
    assert result["buffers"] == "own"
    by_arm: dict[Any, set[Any]] = {}
    for launch in adapter.timed("large"):
        by_arm.setdefault(repr(launch["config"]), set()).add(launch["ptrs"])
    # baseline and control share a config but not tensors: two sets for the default config, one for cand 4
    assert [len(v) for v in by_arm.values()] == [2, 1]
    assert len(set().union(*by_arm.values())) == 3


@pytest.mark.parametrize(("setting", "first_ms", "expected"), [
    ("auto", 0.031, "cudagraph"), ("auto", 0.2, "cupti"), ("events", None, "events"),
    ("cudagraph", None, "cudagraph"), ("cupti", None, "cupti")])
def test_timing_method_choice(setting: Any, first_ms: float | None, expected: str) -> None:
    assert choose_method(setting, first_ms) == expected


@pytest.mark.parametrize(("first_ms", "expected"), [(0.031, "cudagraph"), (0.2, "cupti")])
def test_auto_timing_follows_the_baseline_first_gpu_time_and_is_recorded(first_ms: float, expected: str) -> None:
    adapter = ScaleAdapter()
    calls: list[TimingMethod] = []
    result = measure(adapter, SHAPES[:1], JOBS[0], {}, cpu_evaluation(timing="auto"),
                     timer=fixed_timer(adapter, first_ms, calls))
    assert result["small"]["timing"] == expected
    # the first look by CUPTI (graphs: and one graph timing, to see the call can be captured), then baseline and
    # candidate, then the candidate's host cost (never a clock)
    assert calls == ["cupti"] + ["cudagraph"] * (expected == "cudagraph") + [expected, expected, HOST]
    assert result["small"]["host_ms"] == first_ms


def host_loaded_timer(adapter: ScaleAdapter, gpu_ms: float, events_ms: float,
                      calls: list[Any]) -> Callable[[Callable[[], Any], Any], Timing]:
    """A short call whose GPU clocks read ``gpu_ms`` while events, which count the host's launch gaps, read
    ``events_ms`` (a busy host): what CPU load does to a ~20 us Helion call."""
    inner = fixed_timer(adapter, gpu_ms, calls)

    def timer(fn: Callable[[], Any], method: Any) -> Timing:
        timing = inner(fn, method)
        return Timing(samples_ms=(events_ms,) * 3) if method == "events" else timing

    return timer


class AuthorsSayEvents(ScaleAdapter):
    """A kernel whose module's ``use_cudagraph()`` is False (pretuned rms_norm's): its authors time it with
    events."""

    def authors_timing(self) -> str:
        return "events"


def test_a_module_that_says_events_is_still_ranked_by_gpu_time_with_its_authors_figure_beside() -> None:
    adapter = AuthorsSayEvents()
    calls: list[Any] = []
    result = measure(adapter, SHAPES[:1], JOBS[0], {}, cpu_evaluation(timing="auto"),
                     timer=host_loaded_timer(adapter, 0.019, 0.038, calls))
    shape = result["small"]
    assert shape["timing"] == "cudagraph" and shape["runtime_ms"] == 0.019  # ranked by the GPU clock
    assert shape["authors_timing"] == "events"
    assert shape["authors_ms"] == 0.038 and shape["authors_baseline_ms"] == 0.038  # recorded, never ranked
    assert "GPU time" in shape["timing_source"]


def test_authors_figure_is_not_timed_twice_where_the_authors_use_the_ranking_clock() -> None:
    class AuthorsSayGraphs(ScaleAdapter):
        def authors_timing(self) -> str:
            return "cudagraph"

    adapter = AuthorsSayGraphs()
    result = measure(adapter, SHAPES[:1], JOBS[0], {}, cpu_evaluation(timing="auto"),
                     timer=fixed_timer(adapter, 0.02))
    assert result["small"]["timing"] == "cudagraph" and "authors_ms" not in result["small"]


def refusing_timer(adapter: ScaleAdapter, calls: list[TimingMethod], refuse: dict[str, Exception],
                   first_ms: float = 0.03) -> Callable[[Callable[[], Any], TimingMethod], Timing]:
    """A short kernel (30 us) whose named methods raise the given errors (a capture refused, CUPTI silent)."""
    inner = fixed_timer(adapter, first_ms, calls)

    def timer(fn: Callable[[], Any], method: TimingMethod) -> Timing:
        if method in refuse:
            calls.append(method)
            raise refuse[method]
        return inner(fn, method)

    return timer


def capture_refusing_timer(adapter: ScaleAdapter, calls: list[TimingMethod], error: str
                           ) -> Callable[[Callable[[], Any], TimingMethod], Timing]:
    """A short kernel (30 us of GPU time) whose call raises ``error`` when captured into a CUDA graph."""
    return refusing_timer(adapter, calls, {"cudagraph": RuntimeError(error)})


def test_a_call_cuda_graphs_cannot_capture_is_timed_by_cupti_and_says_why() -> None:
    adapter = ScaleAdapter()
    calls: list[TimingMethod] = []
    error = "CUDA error: operation failed due to a previous error during capture"  # Helion's low_mem_dropout
    result = measure(adapter, SHAPES[:1], JOBS[0], {}, cpu_evaluation(timing="auto"),
                     timer=capture_refusing_timer(adapter, calls, error))
    assert result["small"]["timing"] == "cupti"
    source = result["small"]["timing_source"]
    assert "could not capture" in source and "during capture" in source
    assert calls == ["cupti", "cudagraph", "cupti", "cupti", HOST]


def test_without_cupti_a_short_call_is_timed_by_graphs_and_events_only_where_neither_works() -> None:
    adapter = ScaleAdapter()
    silent = ClockUnavailable("CUPTI recorded kernel time for 0 of 20 calls")
    arms = open_shape(adapter, SHAPES[0], "cpu", 0, "auto", refusing_timer(adapter, [], {"cupti": silent}))
    assert arms.method == "cudagraph" and "CUPTI could not time the call" in arms.method_source
    neither = {"cupti": silent, "cudagraph": RuntimeError("operation not permitted when stream is capturing")}
    arms = open_shape(adapter, SHAPES[0], "cpu", 0, "auto", refusing_timer(adapter, [], neither))
    assert arms.method == "events"
    assert arms.method_source.startswith("events, host time included: neither GPU clock")


def test_any_other_error_of_the_graph_trial_is_the_baseline_s_failure() -> None:
    adapter = ScaleAdapter()
    with pytest.raises(RuntimeError, match="illegal memory access"):
        open_shape(adapter, SHAPES[0], "cpu", 0, "auto",
                   capture_refusing_timer(adapter, [], "CUDA error: an illegal memory access was encountered"))


def test_forced_timing_method_skips_the_first_look() -> None:
    adapter = ScaleAdapter()
    calls: list[TimingMethod] = []
    arms = open_shape(adapter, SHAPES[0], "cpu", 0, "cudagraph", fixed_timer(adapter, 5.0, calls))
    assert arms.method == "cudagraph" and calls == []


@pytest.mark.parametrize("with_reference", [True, False])
def test_real_adapters_bind_the_given_inputs_and_pass_a_missing_reference_on(with_reference: bool) -> None:
    """TritonAdapter and HelionAdapter ``prepare`` on CPU tensors (building needs no GPU; launching would)."""
    import dataclasses

    from paretotune.kernels.bundled.softmax import triton_softmax
    from paretotune.kernels.helion import HelionAdapter
    from paretotune.kernels.triton import TritonAdapter
    from tests.kernels.test_helion_adapter import plain_spec

    triton_spec = triton_softmax if with_reference else dataclasses.replace(triton_softmax, reference=None)
    triton_adapter = TritonAdapter("triton_softmax", triton_spec)
    shape = Shape("s", {"M": 4, "N": 64, "dtype": "float32"})
    inputs = triton_adapter.make_inputs(shape, "cpu", 3)
    prepared = triton_adapter.prepare(triton_adapter.default_config(shape), shape, None, inputs)
    assert prepared.inputs is inputs and prepared.output is inputs["y"]
    if with_reference:
        torch.testing.assert_close(prepared.reference(), torch.softmax(inputs["x"], dim=-1))
    else:
        assert prepared.reference is None

    helion_spec = plain_spec if with_reference else dataclasses.replace(plain_spec, reference=None)
    helion_adapter = HelionAdapter("plain_scale", helion_spec)
    shape = Shape("n", {"N": 1024})
    inputs = helion_adapter.make_inputs(shape, "cpu", 0)
    prepared = helion_adapter.prepare(helion_adapter.default_config(shape), shape, None, inputs)
    assert prepared.inputs is inputs
    if with_reference:
        torch.testing.assert_close(prepared.reference(), inputs["x"] * 2)
    else:
        assert prepared.reference is None
