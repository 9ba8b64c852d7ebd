"""The copy ceiling through the real validation code on CPU tensors: the bytes are the kernel's arguments and
what it returns (each allocation once), the copy moves as many, it is timed in every round by the shape's clock,
and each arm's fraction of it follows from the times. The timer is a stand-in that tells the copy from the
kernel by whether the kernel launched (no clock is read)."""
from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch

from paretotune.measure.ceiling import copy_arm, tensor_bytes
from paretotune.measure.timing import Timing, TimingMethod
from paretotune.kernels.base import Inputs, Prepared
from paretotune.records import Shape
from paretotune.validate.ceilings import add_bandwidth, ceiling_line
from paretotune.validate.worker import validate_shape

SHAPE = Shape("s", {"N": 4096})
KERNEL_MS, COPY_MS = 0.050, 0.040


class Returning:
    """``y = x * scale`` returned in a new tensor (Helion's way: the output is allocated inside the kernel)."""

    name = "returning"

    def __init__(self) -> None:
        self.launches = 0

    def default_config(self, shape: Shape) -> dict[str, Any]:
        return {"scale": 2.0}

    def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
        g = torch.Generator().manual_seed(seed)
        return {"x": torch.randn(int(shape.params["N"]), generator=g)}

    def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
        def launch() -> torch.Tensor:
            self.launches += 1
            return inputs["x"] * config["scale"]

        return Prepared(launch=launch, reference=None, atol=1e-6, rtol=1e-6, kernel_name="k", inputs=inputs)


def telling_timer(adapter: Returning, methods: list[TimingMethod]) -> Callable[[Callable[[], Any], TimingMethod],
                                                                              Timing]:
    def timer(fn: Callable[[], Any], method: TimingMethod) -> Timing:
        before = adapter.launches
        fn()
        methods.append(method)
        return Timing(samples_ms=(KERNEL_MS if adapter.launches > before else COPY_MS,))

    return timer


def test_the_bytes_are_arguments_and_outputs_each_allocation_once() -> None:
    x = torch.zeros(1000)  # 4,000 bytes
    assert tensor_bytes({"x": x, "view": x[10:20], "again": x}, (x * 2, x[:5])) == 8000
    assert tensor_bytes({"n": 3, "s": "text"}) == 0


def test_the_copy_moves_the_bytes_it_is_given() -> None:
    arm = copy_arm(8000, "cpu")
    assert arm.inputs["src"].numel() == arm.inputs["dst"].numel() == 4000
    arm.inputs["src"].fill_(7)
    arm.launch()
    assert bool((arm.inputs["dst"] == 7).all())


def test_validation_times_the_copy_in_every_round_by_the_shapes_clock() -> None:
    adapter = Returning()
    methods: list[TimingMethod] = []
    cands = [{"candidate_id": 3, "config": {"scale": 2.0}, "acf_path": None}]
    out = validate_shape(adapter, SHAPE, cands, rounds=4, seed=0, device="cpu", setting="events",
                         timer=telling_timer(adapter, methods), rng=random.Random(0))
    nbytes = 2 * 4096 * 4  # x, and the y it returns
    assert out["ceiling"] == pytest.approx({"bytes": nbytes, "copy_ms": COPY_MS,
                                            "copy_gbps": nbytes / (COPY_MS * 1e-3) / 1e9})
    assert set(methods) == {"events", "host"} and methods.count("events") == 4 * (3 + 1)  # 3 arms + the copy
    table = pd.DataFrame({"shape": ["s", "s"], "candidate_id": [-1, 3]})
    summary = add_bandwidth(table, {"s": out})
    assert list(table["of_copy"]) == pytest.approx([COPY_MS / KERNEL_MS] * 2)
    assert list(table["gbps"]) == pytest.approx([nbytes / (KERNEL_MS * 1e-3) / 1e9] * 2)
    assert summary["s"]["baseline_of_copy"] == pytest.approx(0.8)


def test_a_shape_without_a_ceiling_says_why_and_leaves_its_rows_empty() -> None:
    table = pd.DataFrame({"shape": ["s"], "candidate_id": [3]})
    found = {"bytes": 0, "copy_ms": None, "why_not": "the kernel's arguments and outputs hold no tensor bytes"}
    summary = add_bandwidth(table, {"s": {"samples": {"baseline": [1.0], "3": [0.9]}, "ceiling": found}})
    assert math.isnan(table.at[0, "of_copy"]) and math.isnan(table.at[0, "gbps"])
    assert ceiling_line(summary["s"], None) == ("memory: no copy ceiling (the kernel's arguments and outputs hold "
                                                "no tensor bytes)")


def test_validate_names_a_call_that_runs_more_than_its_kernel_on_the_gpu() -> None:
    """The shape's record names one call's GPU activities (the first CUPTI look); ``paretotune validate`` prints
    them where a call runs more than one, beside the copy ceiling its bytes are read against."""
    from paretotune.commands.validate import render

    adapter, methods = Returning(), []
    plain = telling_timer(adapter, methods)

    def timer(fn: Callable[[], Any], method: TimingMethod) -> Timing:
        timing = plain(fn, method)
        return Timing(timing.samples_ms, ("_kernel", "to_copy", "cat") if method == "cupti" else ())

    out = validate_shape(adapter, SHAPE, [{"candidate_id": 3, "config": {"scale": 2.0}, "acf_path": None}], rounds=3,
                         seed=0, device="cpu", setting="auto", timer=timer, rng=random.Random(0))
    table = pd.DataFrame([{"shape": "s", "candidate_id": 3, "role": "control", "speedup": 1.0}])
    assert out["gpu_work"] == ["_kernel", "to_copy", "cat"]
    unreliable = {"s": {"reliable": False, "reason": "a stand-in clock"}}
    text = render(table, unreliable, {}, add_bandwidth(table, {"s": out}), {"s": {"gpu_work": out["gpu_work"]}})
    assert "  each timed call runs 3 GPU activities, all of them timed: _kernel, to_copy, cat" in text.splitlines()
    assert "GPU activities" not in render(table, unreliable, {}, {}, {"s": {"gpu_work": ["_kernel"]}})
