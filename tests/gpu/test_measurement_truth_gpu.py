"""Measurement truth on a real GPU: every arm of a shape is timed on the same CUDA tensors, correctness runs on
other inputs first, a spec without a reference is checked against the baseline, short kernels are timed with
CUDA graphs (Helion's host code included)."""
from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from paretotune.campaign.schema import EvaluationSpec
from paretotune.measure.arms import check_candidate, open_shape
from paretotune.measure.gpu_worker import GpuJob, measure
from paretotune.measure.timing import TimingMethod, bench, gpu_timer
from paretotune.validate.worker import validate_shape
from paretotune.kernels.base import Inputs, Prepared
from paretotune.kernels.triton import TritonAdapter
from paretotune.records import Shape
from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

export_for_triton(find_ptxas())  # the ptxas campaigns use, before any launch compiles

pytestmark = pytest.mark.gpu
DEVICE = "cuda:0"


class Recording:
    """Wraps a real adapter; every launch records the data pointers of the tensors it is bound to."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, inner.name
        self.launches: list[dict[str, Any]] = []
        self.in_timer = False

    def space(self) -> dict[str, list[Any]]:
        return self.inner.space()

    def default_config(self, shape: Shape) -> dict[str, Any]:
        return self.inner.default_config(shape)

    def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
        return self.inner.make_inputs(shape, device, seed)

    def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
        prepared = self.inner.prepare(config, shape, acf, inputs)
        ptrs = tuple(sorted((k, v.data_ptr()) for k, v in inputs.items() if hasattr(v, "data_ptr")))
        inner_launch = prepared.launch

        def launch() -> Any:
            self.launches.append({"config": dict(config), "acf": acf, "ptrs": ptrs, "timed": self.in_timer})
            return inner_launch()

        return dataclasses.replace(prepared, launch=launch)

    def timer(self, warmup_ms: float, rep_ms: float) -> Any:
        real = gpu_timer(warmup_ms, rep_ms)

        def timed(fn: Any, method: TimingMethod) -> Any:
            self.in_timer = True
            try:
                return real(fn, method)
            finally:
                self.in_timer = False

        return timed


def _softmax() -> TritonAdapter:
    from paretotune.kernels.bundled.softmax import triton_softmax

    return TritonAdapter("triton_softmax", triton_softmax)


def _scale(reference: bool) -> TritonAdapter:
    from tests.gpu.faulty_kernels import faulty_scale

    spec = faulty_scale if reference else dataclasses.replace(faulty_scale, reference=None)
    return TritonAdapter("faulty_scale", spec)


def test_search_arms_share_cuda_buffers() -> None:
    adapter = Recording(_softmax())
    shapes = [Shape("s", {"M": 1024, "N": 4096, "dtype": "float16"})]
    spec = EvaluationSpec(warmup_ms=2, rep_ms=5)
    baselines: dict[str, Any] = {}
    configs = [{**adapter.default_config(shapes[0]), "num_warps": w} for w in (8, 16)]
    for i, config in enumerate(configs):
        result = measure(adapter, shapes, GpuJob(i + 1, config, None, 1000 + i),
                         baselines, spec, timer=adapter.timer(2, 5))
        assert result["s"]["runtime_ms"] > 0 and result["s"]["timing"] in ("cudagraph", "cupti")  # a GPU clock
    timed = [launch for launch in adapter.launches if launch["timed"]]
    assert {launch["config"]["num_warps"] for launch in timed} == {adapter.default_config(shapes[0])["num_warps"],
                                                                    8, 16}
    assert len({launch["ptrs"] for launch in timed}) == 1


def test_validate_arms_share_cuda_buffers_and_checks_do_not() -> None:
    adapter = Recording(_scale(reference=True))
    shape = Shape("n", {"N": 1 << 22})
    cands = [{"candidate_id": 3, "config": {**adapter.default_config(shape), "num_warps": 8}, "acf_path": None},
             {"candidate_id": 4, "config": {**adapter.default_config(shape), "BUG": 1}, "acf_path": None}]
    result = validate_shape(adapter, shape, cands, rounds=3, seed=0, device=DEVICE, setting="auto",
                            timer=adapter.timer(2, 5), rng=random.Random(0))
    assert set(result["samples"]) == {"baseline", "-1", "3"} and "wrong answer" in result["errors"]["4"]
    timed = [launch for launch in adapter.launches if launch["timed"]]
    assert len({launch["ptrs"] for launch in timed}) == 1
    first_timed = next(i for i, launch in enumerate(adapter.launches) if launch["timed"])
    checked = [launch["config"] for launch in adapter.launches[:first_timed]]
    assert cands[0]["config"] in checked and cands[1]["config"] in checked  # both checked before any timing


def test_validation_measures_the_copy_ceiling_of_a_memory_bound_kernel() -> None:
    """``y = x * scale`` over 64 MiB each way is memory-bound: the copy of its 128 MiB, timed in the same rounds by
    the same clock, runs at a bandwidth under the H200's nominal 4.8 TB/s, and the kernel comes near it."""
    adapter = _scale(reference=True)
    n = 1 << 24
    shape = Shape("n", {"N": n})
    result = validate_shape(adapter, shape, [], rounds=5, seed=0, device=DEVICE, setting="auto",
                            timer=gpu_timer(2, 10), rng=random.Random(0))
    ceiling = result["ceiling"]
    assert ceiling["bytes"] == 2 * 4 * n and ceiling["copy_ms"] is not None, ceiling
    assert 1000 < ceiling["copy_gbps"] < 4800, ceiling
    baseline_ms = sorted(result["samples"]["baseline"])[2]
    assert 0.5 < ceiling["copy_ms"] / baseline_ms < 1.2, (ceiling, baseline_ms)


def test_default_reference_is_the_baseline_output_on_cuda() -> None:
    adapter = _scale(reference=False)
    shape = Shape("n", {"N": 1 << 20})
    good, wrong = adapter.default_config(shape), {**adapter.default_config(shape), "BUG": 1}
    assert adapter.prepare(good, shape, None, adapter.make_inputs(shape, DEVICE, 0)).reference is None
    assert check_candidate(adapter, {**good, "num_warps": 8}, shape, None, DEVICE, seed=7) is None
    problem = check_candidate(adapter, wrong, shape, None, DEVICE, seed=7)
    assert problem is not None and problem.startswith("wrong answer")


def test_short_kernel_is_timed_with_cuda_graphs() -> None:
    adapter = _scale(reference=True)
    arms = open_shape(adapter, Shape("n", {"N": 1 << 16}), DEVICE, 0, "auto", gpu_timer(2, 5))
    assert arms.method == "cudagraph"  # a 64k-element scale runs in a few microseconds
    timing = bench(arms.baseline.launch, 2, 5, "cudagraph")
    assert len(timing.samples_ms) >= 5 and 0 < timing.median_ms < 0.05


class HostSyncing(Recording):
    """A short kernel whose call also reads a value back to the host (``.item()``): CUDA graphs cannot capture it."""

    def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
        prepared = self.inner.prepare(config, shape, acf, inputs)
        inner_launch = prepared.launch

        def launch() -> Any:
            out = inner_launch()
            next(v for v in inputs.values() if hasattr(v, "sum")).sum().item()
            return out

        return dataclasses.replace(prepared, launch=launch)


def test_a_call_graphs_cannot_capture_is_timed_by_cupti_on_a_context_still_good() -> None:
    adapter = HostSyncing(_scale(reference=True))
    arms = open_shape(adapter, Shape("n", {"N": 1 << 16}), DEVICE, 0, "auto", gpu_timer(2, 5))
    assert arms.method == "cupti" and "could not capture" in arms.method_source, arms.method_source
    timing = arms.time(arms.baseline, gpu_timer(2, 5))  # the failed capture left the CUDA context usable
    assert len(timing.samples_ms) >= 5 and timing.median_ms > 0


def test_helion_launch_is_timed_under_cuda_graphs() -> None:
    from paretotune.kernels.bundled.helion_rms_norm import helion_rms_norm
    from paretotune.kernels.helion import HelionAdapter

    adapter = HelionAdapter("helion_rms_norm", helion_rms_norm)
    shape = Shape("llm", {"M": 2048, "N": 4096})
    prepared = adapter.prepare(adapter.default_config(shape), shape, None, adapter.make_inputs(shape, DEVICE, 0))
    graphs = bench(prepared.launch, 5, 20, "cudagraph")
    events = bench(prepared.launch, 5, 20, "events")
    assert 0 < graphs.median_ms and 0 < events.median_ms


def test_campaign_without_reference_then_validate_records_the_timing_method(tmp_path: Path) -> None:
    import json
    import textwrap

    import pandas as pd

    from paretotune.cli import main as cli

    here = Path(__file__).resolve().parent
    cfg = tmp_path / "campaign.yaml"
    cfg.write_text(textwrap.dedent(f"""
        name: no-reference
        kernel: {{source: "{here / 'faulty_kernels.py'}:faulty_scale_no_reference", space: {{BUG: [0, 1]}}}}
        shapes: [{{name: n1m, N: 1048576}}]
        objectives: [runtime]
        acf: {{search_space: none}}
        search: {{engine: grid, generations: 1, pool_size: 10}}
        evaluation: {{workers: 2, warmup_ms: 2, rep_ms: 5}}
    """))
    run = tmp_path / "run"
    assert cli(["run", str(cfg), "--out", str(run), "--quiet"]) == 0
    df = pd.read_json(run / "results.jsonl", lines=True)
    bug = df["config"].map(lambda c: json.loads(c)["BUG"])
    assert (df.loc[bug == 0, "status"] == "ok").all()
    wrong = df[bug == 1]
    assert not wrong.empty and wrong["error"].str.contains("wrong answer").all()  # vs the baseline's output
    timing = {json.loads(e)["n1m"]["timing"] for e in df.loc[df["status"] == "ok", "extra"]}
    assert timing == {"cudagraph"}  # a 1M-element scale runs in a few microseconds
    assert cli(["validate", str(run), "--top", "2", "--rounds", "6", "--rep-ms", "5"]) == 0
    shape = json.loads((run / "validation.json").read_text())["samples"]["n1m"]
    assert shape["timing"] == "cudagraph" and shape["buffers"] == "shared"
