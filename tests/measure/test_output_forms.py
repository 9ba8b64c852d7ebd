"""Any output form, and kernels that update an argument in place, through the real check and timing code
(:mod:`paretotune.measure.arms`) on CPU tensors. On the H200 (74b6e06) a RoPE kernel returning ``(q, k)``
failed its baseline (``'tuple' object has no attribute 'clone'``), and a fused QK-norm + RoPE that updates
``qkv`` in place failed against itself: the candidate ran on the baseline's output."""
from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import torch

from paretotune.measure.arms import check_candidate, open_shape
from paretotune.measure.gpu_worker import GpuJob, measure
from paretotune.validate.worker import validate_shape
from paretotune.kernels.base import Inputs, Prepared
from paretotune.records import Shape
from tests.measure.test_arms import cpu_evaluation

SHAPE = Shape("s", {"N": 512})
Launch = Callable[[dict[str, torch.Tensor], Mapping[str, Any]], Any]


class TorchAdapter:
    """A kernel adapter whose launch is a torch function of the inputs and the config (no reference: each
    candidate is compared with the baseline build, ``bias: 0``). ``seen`` holds x[0] at every launch."""

    name = "torch"

    def __init__(self, launch: Launch) -> None:
        self._launch = launch
        self.seen: list[float] = []

    def default_config(self, shape: Shape) -> dict[str, Any]:
        return {"bias": 0.0, "num_warps": 4}

    def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
        g = torch.Generator().manual_seed(seed)
        n = int(shape.params["N"])
        return {"x": torch.randn(n, generator=g) + 3.0, "y": torch.randn(n, generator=g)}

    def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
        def launch() -> Any:
            self.seen.append(float(inputs["x"][0]))
            return self._launch(inputs, config)

        return Prepared(launch=launch, reference=None, atol=1e-6, rtol=1e-6, kernel_name="k", inputs=inputs)


def _rope_like(t: dict[str, torch.Tensor], c: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    return t["x"] * 2, t["y"] + c["bias"]  # a second output that only a wrong candidate changes


def _nested(t: dict[str, torch.Tensor], c: Mapping[str, Any]) -> list[Any]:
    return [t["x"] * 2, {"stats": (t["x"].sum() + c["bias"], t["y"].max())}]


def _in_place(t: dict[str, torch.Tensor], c: Mapping[str, Any]) -> None:
    t["x"].mul_(0.5).add_(c["bias"])  # x <- x / 2: wrong if applied twice, like qkv's norm + rotation


def _in_place_returning(t: dict[str, torch.Tensor], c: Mapping[str, Any]) -> torch.Tensor:
    return t["x"].mul_(0.5).add_(c["bias"])


def test_a_tuple_output_is_compared_element_by_element() -> None:
    adapter = TorchAdapter(_rope_like)
    assert check_candidate(adapter, {"bias": 0.0, "num_warps": 8}, SHAPE, None, "cpu", seed=1) is None
    problem = check_candidate(adapter, {"bias": 0.5, "num_warps": 8}, SHAPE, None, "cpu", seed=1)
    assert problem is not None and problem.startswith("output 1: wrong answer: 512 of 512 elements off")


def test_nested_outputs_with_scalars_are_compared() -> None:
    adapter = TorchAdapter(_nested)
    assert check_candidate(adapter, {"bias": 0.0, "num_warps": 8}, SHAPE, None, "cpu", seed=2) is None
    problem = check_candidate(adapter, {"bias": 1.0, "num_warps": 8}, SHAPE, None, "cpu", seed=2)
    assert problem is not None and problem.startswith("output 1: wrong answer: 1 of 1 elements off")


@pytest.mark.parametrize("launch", [_in_place, _in_place_returning], ids=["returns None", "returns its argument"])
def test_an_in_place_kernel_starts_from_the_same_inputs_in_every_checked_launch(launch: Launch) -> None:
    adapter = TorchAdapter(launch)
    assert check_candidate(adapter, {"bias": 0.0, "num_warps": 8}, SHAPE, None, "cpu", seed=3) is None
    first = float(adapter.make_inputs(SHAPE, "cpu", 3)["x"][0])
    assert adapter.seen == [first, first]  # baseline, then candidate: both on the pristine values
    problem = check_candidate(adapter, {"bias": 0.25, "num_warps": 8}, SHAPE, None, "cpu", seed=3)
    assert problem is not None and "wrong answer: 512 of 512 elements off" in problem


def test_an_in_place_argument_named_as_the_output_is_not_poisoned() -> None:
    """A captured Triton kernel names its written argument as the output; when that argument is also read
    (in place), filling it with NaN before each launch would feed NaN to the baseline and every candidate, and a
    wrong candidate would pass (NaN against NaN). Only a write-only output is poisoned."""
    class OutputIsX(TorchAdapter):
        def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
            prepared = super().prepare(config, shape, acf, inputs)
            prepared.output = inputs["x"]
            return prepared

    adapter = OutputIsX(_in_place_returning)
    assert check_candidate(adapter, {"bias": 0.0, "num_warps": 8}, SHAPE, None, "cpu", seed=3) is None
    problem = check_candidate(adapter, {"bias": 0.25, "num_warps": 8}, SHAPE, None, "cpu", seed=3)
    assert problem is not None and "wrong answer: 512 of 512 elements off" in problem


def test_an_expanded_input_is_neither_copied_back_nor_counted_as_written() -> None:
    """A broadcast scale (an expanded view: stride 0) cannot be written by ``copy_``; Helion's fp8_matmul example
    passes one, and its baseline failed on the restore ("more than one element of the written-to tensor refers
    to a single memory location", H200, 2026-12-02)."""
    class Broadcast(TorchAdapter):
        def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
            made = super().make_inputs(shape, device, seed)
            return {**made, "scale": torch.full((1,), 3.0).expand(int(shape.params["N"]))}

    adapter = Broadcast(lambda t, c: t["x"] * t["scale"] + c["bias"])
    assert check_candidate(adapter, {"bias": 0.0, "num_warps": 8}, SHAPE, None, "cpu", seed=5) is None
    problem = check_candidate(adapter, {"bias": 0.5, "num_warps": 8}, SHAPE, None, "cpu", seed=5)
    assert problem is not None and problem.startswith("wrong answer: 512 of 512 elements off")
    arms = open_shape(adapter, SHAPE, "cpu", 0, "events", lambda fn, method: None)
    assert arms.written == []


def test_a_candidate_that_writes_an_input_the_baseline_only_reads_is_wrong() -> None:
    def scribbles(t: dict[str, torch.Tensor], c: Mapping[str, Any]) -> torch.Tensor:
        out = t["x"] * 2
        if c["num_warps"] == 8:
            t["y"][0] = 0.0
        return out

    problem = check_candidate(TorchAdapter(scribbles), {"bias": 0.0, "num_warps": 8}, SHAPE, None, "cpu", seed=4)
    assert problem == "wrote into input tensor 1, which the baseline build only reads"


def _counting_timer(adapter: TorchAdapter, starts: list[float]) -> Callable[..., Any]:
    from paretotune.measure.timing import Timing

    def timer(fn: Callable[[], Any], method: str) -> Timing:
        starts.append(len(adapter.seen))
        for _ in range(4):
            fn()
        return Timing(samples_ms=(0.1,))

    return timer


def test_timing_rounds_of_an_in_place_kernel_start_from_the_pristine_buffers() -> None:
    """Search and validate time every arm on one shared buffer set: the argument the kernel writes is restored
    before each round, so x[0] at each round's first launch is the value the buffers were made with."""
    adapter = TorchAdapter(_in_place)
    starts: list[int] = []
    timer = _counting_timer(adapter, starts)
    result = measure(adapter, [SHAPE], GpuJob(1, {"bias": 0.0, "num_warps": 8}, None, 7),
                     {}, cpu_evaluation(timing="events"), timer=timer)
    assert result["s"]["restored_inputs"] == [0] and result["s"]["timing_source"] == "evaluation.timing"
    pristine = float(adapter.make_inputs(SHAPE, "cpu", 12345)["x"][0])
    # baseline, candidate, and the candidate's host cost: each round starts from the pristine buffers
    assert len(starts) == 3 and all(adapter.seen[i] == pristine for i in starts)
    adapter.seen.clear()
    starts.clear()
    cands = [{"candidate_id": 4, "config": {"bias": 0.0, "num_warps": 8}, "acf_path": None}]
    out = validate_shape(adapter, SHAPE, cands, rounds=3, seed=0, device="cpu", setting="events", timer=timer,
                         rng=random.Random(0))
    assert out["restored_inputs"] == [0] and not out["errors"]
    pristine = float(adapter.make_inputs(SHAPE, "cpu", 0)["x"][0])
    # three arms, three rounds, each round's copy-ceiling timing (no kernel launch), then each arm's host cost:
    # every kernel timing from the pristine buffers
    launched = [i for i, j in zip(starts, [*starts[1:], len(adapter.seen)], strict=True) if j > i]
    assert len(starts) == 9 + 3 + 3 and len(launched) == 9 + 3 and all(adapter.seen[i] == pristine for i in launched)


def test_auto_timing_ranks_by_the_gpu_clock_and_keeps_the_authors_method_beside() -> None:
    """The module's use_cudagraph() no longer picks the ranking clock: a first CUPTI look does. Where the
    authors' method differs it is kept beside (recorded, never ranked); where it is the same, not twice."""
    from paretotune.measure.timing import Timing

    class Authored(TorchAdapter):
        def __init__(self, fn: Any, says: str) -> None:
            super().__init__(fn)
            self.says = says

        def authors_timing(self) -> str:
            return self.says

    calls: list[str] = []

    def timer(fn: Callable[[], Any], method: str) -> Any:
        calls.append(method)
        return Timing(samples_ms=(0.02,))  # 20 us of GPU time: a short call

    arms = open_shape(Authored(_rope_like, "cudagraph"), SHAPE, "cpu", 0, "auto", timer)
    assert arms.method == "cudagraph" and arms.authors_method is None and calls == ["cupti", "cudagraph"]
    arms = open_shape(Authored(_rope_like, "events"), SHAPE, "cpu", 0, "auto", timer)
    assert arms.method == "cudagraph" and arms.authors_method == "events"


def test_the_gpu_work_of_a_timed_call_goes_into_the_shape_s_record() -> None:
    """The first CUPTI look names what one baseline call runs on the GPU; the search's record and validation's
    shape record both carry it (a named clock takes no look, and says nothing)."""
    from paretotune.measure.arms import arms_notes
    from paretotune.measure.timing import Timing

    def timer(fn: Callable[[], Any], method: str) -> Any:
        fn()
        return Timing(samples_ms=(0.05,), call_work=("_helion_quant", "CatArrayBatchedCopy") if method == "cupti"
                      else ())

    adapter = TorchAdapter(_rope_like)
    arms = open_shape(adapter, SHAPE, "cpu", 0, "auto", timer)
    assert arms.method == "cupti" and arms_notes(arms)["gpu_work"] == ["_helion_quant", "CatArrayBatchedCopy"]
    assert "gpu_work" not in arms_notes(open_shape(adapter, SHAPE, "cpu", 0, "events", timer))
    result = measure(adapter, [SHAPE], GpuJob(1, {"bias": 0.0, "num_warps": 8}, None, 7), {},
                     cpu_evaluation(timing="auto"), timer=timer)
    assert result["s"]["gpu_work"] == ["_helion_quant", "CatArrayBatchedCopy"]
    cands = [{"candidate_id": 4, "config": {"bias": 0.0, "num_warps": 8}, "acf_path": None}]
    out = validate_shape(adapter, SHAPE, cands, rounds=2, seed=0, device="cpu", setting="auto", timer=timer,
                         rng=random.Random(0))
    assert out["gpu_work"] == ["_helion_quant", "CatArrayBatchedCopy"]
