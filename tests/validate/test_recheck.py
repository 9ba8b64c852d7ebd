"""Nothing wrong ships: the re-check of a winner against its no-ACF twin, on CPU tensors (an adapter computing
``y = x * scale`` in torch whose "ACFs" are wrong only on some inputs), and its process handling (stand-in
workers that hang or crash, so that a hang costs its time limit and nothing else)."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from paretotune.validate.recheck import SCALES, SEED_BASE, recheck_job, recheck_seeds, run_jobs
from paretotune.kernels.base import Inputs, Prepared
from paretotune.records import Shape
from tests.validate import recheck_workers

SHAPE = Shape("n", {"N": 512})


class AcfAdapter:
    """``y = x * scale``; an ACF named ``big.acf`` is wrong where |x| > 100 (only on inputs scaled up), one named
    ``ulp.acf`` adds a rounding difference within tolerance, ``inplace.acf`` also writes into ``x``."""

    name = "scale"

    def __init__(self) -> None:
        self.seeds: list[int] = []

    def default_config(self, shape: Shape) -> dict[str, Any]:
        return {"scale": 2.0}

    def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
        self.seeds.append(seed)
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(int(shape.params["N"]), generator=g)
        return {"x": x, "y": torch.empty_like(x)}

    def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
        x, y = inputs["x"], inputs["y"]
        kind = acf.stem if acf else ""

        def launch() -> torch.Tensor:
            torch.mul(x, config["scale"], out=y)
            if kind == "big":
                y[x.abs() > 100] = 0.0
            if kind == "ulp":
                y.mul_(1 + 1e-7)
            if kind == "inplace":
                x.add_(1.0)
            return y

        return Prepared(launch=launch, reference=None, atol=1e-3, rtol=1e-3, kernel_name="scale", inputs=inputs,
                        output=y)


def job(acf: str | None) -> dict[str, Any]:
    return {"candidate_id": 7, "shape": "n", "config": {"scale": 2.0}, "acf_path": acf}


def test_a_good_acf_passes_every_check_bit_identical() -> None:
    adapter = AcfAdapter()
    seeds = recheck_seeds(5)
    result = recheck_job(adapter, SHAPE, job("/acfs/good.acf"), "cpu", seeds, SCALES)
    assert result["run"] == result["passed"] == 3 * len(SCALES) and result["bit_identical"]
    assert result["reference"] == "no-ACF twin" and not result["failures"]
    # fresh inputs: seeds no search or validate draws (they use campaign_seed * 100003 + id and seed + 2 + id)
    assert set(adapter.seeds) == set(seeds) and min(seeds) >= SEED_BASE


def test_an_acf_wrong_only_on_large_inputs_is_caught_by_the_scaled_draws() -> None:
    result = recheck_job(AcfAdapter(), SHAPE, job("/acfs/big.acf"), "cpu", recheck_seeds(0), SCALES)
    assert result["passed"] == 3 * (len(SCALES) - 1) and result["run"] == 3 * len(SCALES)
    assert not result["bit_identical"]
    assert all("x1000" in f and "wrong answer" in f for f in result["failures"])


def test_within_tolerance_is_a_pass_but_not_bit_identical() -> None:
    result = recheck_job(AcfAdapter(), SHAPE, job("/acfs/ulp.acf"), "cpu", recheck_seeds(0), SCALES)
    assert result["passed"] == result["run"] and not result["bit_identical"]


def test_writing_an_input_the_twin_only_reads_fails() -> None:
    result = recheck_job(AcfAdapter(), SHAPE, job("/acfs/inplace.acf"), "cpu", recheck_seeds(0), (1.0,))
    assert result["passed"] == 0 and "wrote into input tensor" in result["failures"][0]


def test_a_winner_without_an_acf_is_checked_against_the_baseline_build() -> None:
    result = recheck_job(AcfAdapter(), SHAPE, {**job(None), "config": {"scale": 2.0005}}, "cpu",
                         recheck_seeds(0), SCALES)
    assert result["reference"] == "baseline build" and result["passed"] == result["run"]
    assert not result["bit_identical"]


class StaleBufferAdapter(AcfAdapter):
    """The output buffer arrives holding the reference's answer already (an allocation reused from an earlier
    draw of the same seed: the inputs' scaling scales it too, so it matches at every factor). CI met this once
    (8 of 9 checks passed): the reference's write then changes nothing and looked like no write at all."""

    def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
        inputs = super().make_inputs(shape, device, seed)
        inputs["y"].copy_(inputs["x"] * 2.0)
        return inputs


def test_an_output_buffer_already_holding_the_answer_is_still_the_reference_builds_output() -> None:
    result = recheck_job(StaleBufferAdapter(), SHAPE, job("/acfs/ulp.acf"), "cpu", recheck_seeds(0), SCALES)
    assert result["passed"] == result["run"] == 3 * len(SCALES), result["failures"]
    assert not result["bit_identical"]
    wrong = recheck_job(StaleBufferAdapter(), SHAPE, job("/acfs/big.acf"), "cpu", recheck_seeds(0), SCALES)
    assert wrong["passed"] == 3 * (len(SCALES) - 1) and all("wrong answer" in f for f in wrong["failures"])


def jobs(*kinds: str) -> list[dict[str, Any]]:
    return [{"candidate_id": i, "shape": "s", "do": kind} for i, kind in enumerate(kinds)]


def test_a_hung_job_is_killed_at_its_limit_and_a_fresh_worker_runs_the_rest(tmp_path: Path) -> None:
    todo = jobs("ok", "hang", "ok")
    results = run_jobs(todo, recheck_workers.worker, ("stand-in",), tmp_path, job_timeout_s=2, start_timeout_s=120)
    assert set(results) == {"0@s", "1@s", "2@s"}
    assert results["1@s"]["passed"] == 0 and "timed out after 2 s" in results["1@s"]["failures"][0]
    assert results["0@s"]["passed"] == results["2@s"]["passed"] == 2
    assert results["0@s"]["pid"] != results["2@s"]["pid"]  # the job after the hang ran in a new worker


def test_a_crash_fails_its_own_job_only(tmp_path: Path) -> None:
    results = run_jobs(jobs("crash", "ok"), recheck_workers.worker, ("stand-in",), tmp_path, job_timeout_s=60)
    assert "exited with code 3" in results["0@s"]["failures"][0] and results["0@s"]["passed"] == 0
    assert results["1@s"]["passed"] == 2


def test_a_worker_that_cannot_start_fails_every_job_saying_why(tmp_path: Path) -> None:
    results = run_jobs(jobs("ok", "ok"), recheck_workers.broken_setup, ("stand-in",), tmp_path, job_timeout_s=60)
    assert len(results) == 2
    assert all("the kernel does not import" in r["failures"][0] and r["passed"] == 0 for r in results.values())
