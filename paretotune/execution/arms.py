"""The arms of one shape share one timing buffer set; each candidate's correctness check gets fresh inputs.

Search (:mod:`paretotune.execution.gpu_worker`) and ``validate`` (:mod:`paretotune.execution.validate_worker`)
both go through here, so both time the baseline, the control and every candidate of a shape on the same input
and output tensors: on an H200 the same build timed on other buffers moved by up to 2.5 %, more than the ACF
gains the search looks for. One set rather than several rotated ones: every arm then differs only in its build,
and no between-set spread is added to any arm's samples (the absolute times are those of one placement; only
ratios are compared).

Correctness is checked before a candidate is timed, on inputs made from its own seed, so a kernel that only
works on the timing data (or leaves outputs unwritten) is caught. A spec without a ``reference`` is compared with
the baseline build's output (default config, no ACF) on the same fresh inputs, with the spec's tolerances.

Nothing here needs CUDA: with CPU tensors and an injected :data:`~paretotune.execution.timing.Timer` the same
code runs in tests.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paretotune.execution.timing import Timer, TimingMethod, TimingSetting, check_output, choose_method
from paretotune.kernels.base import Inputs, KernelAdapter, Prepared
from paretotune.records import Shape

TIMING_SEED = 12345  # search's timing buffers (each candidate's correctness inputs come from its own seed)


def input_seed(campaign_seed: int, candidate_id: int) -> int:
    """Each candidate gets its own fresh random inputs, reproducible from the campaign seed."""
    return campaign_seed * 100003 + candidate_id


def sync(device: str) -> None:
    """Wait for the device's queued kernels (nothing to wait for on the CPU)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def poison(prepared: Prepared) -> None:
    """Fill the output the kernel writes into with NaN, so that an unwritten element fails the check."""
    out = prepared.output
    if out is not None and out.is_floating_point():
        out.fill_(float("nan"))


def check_candidate(adapter: KernelAdapter, config: dict[str, Any], shape: Shape, acf: Path | None, device: str,
                    seed: int) -> str | None:
    """None if the candidate's output on fresh inputs (from ``seed``) matches the expected one, else why not.

    Expected: the spec's reference, or without one the baseline build's output on the same inputs.
    """
    inputs = adapter.make_inputs(shape, device, seed)
    cand = adapter.prepare(config, shape, acf, inputs)
    if cand.reference is not None:
        expected = cand.reference()
    else:
        base = adapter.prepare(adapter.default_config(shape), shape, None, inputs)
        poison(base)
        expected = base.launch()
        sync(device)
        if expected is None:
            return "the baseline returned no output to compare with (the kernel spec has no reference)"
        expected = expected.clone()  # the candidate writes into the same output buffer
    poison(cand)
    got = cand.launch()
    sync(device)
    return check_output(got, expected, cand.atol, cand.rtol)


@dataclass
class ShapeArms:
    """One shape's timing buffers, its baseline bound to them, and the method that times every arm."""

    adapter: KernelAdapter
    shape: Shape
    device: str
    inputs: Inputs
    baseline: Prepared
    method: TimingMethod

    def bind(self, config: dict[str, Any], acf: Path | None) -> Prepared:
        """Another arm (control or candidate) on this shape's timing buffers, launched once (built, warm)."""
        prepared = self.adapter.prepare(config, self.shape, acf, self.inputs)
        prepared.launch()
        sync(self.device)
        return prepared


def open_shape(adapter: KernelAdapter, shape: Shape, device: str, seed: int, setting: TimingSetting,
               timer: Timer) -> ShapeArms:
    """Make the shape's timing buffers from ``seed``, bind the baseline, and choose the timing method (``auto``:
    from a first events timing of the baseline)."""
    inputs = adapter.make_inputs(shape, device, seed)
    baseline = adapter.prepare(adapter.default_config(shape), shape, None, inputs)
    baseline.launch()
    sync(device)
    first = timer(baseline.launch, "events").median_ms if setting == "auto" else None
    return ShapeArms(adapter, shape, device, inputs, baseline, choose_method(setting, first))
