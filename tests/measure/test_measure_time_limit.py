"""A search candidate's GPU measurement is cut off at a limit scaled to the baseline's, and the timeout says
where the candidate was.

The worker test runs on a CPU: the kernel's input factory never returns for a CUDA device (as a kernel that
never finishes would hold the worker), so the job hangs in its first phase, before any CUDA call.
"""
from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

from paretotune.campaign.load import campaign_from_text
from paretotune.campaign.schema import EvaluationSpec
from paretotune.build.base import measure_time_limit
from paretotune.measure.gpu import GpuWorker
from paretotune.measure.gpu_worker import GpuJob
from paretotune.runner.evaluator import measure_request
from paretotune.toolchain.ptxas import find_ptxas

HANGING_KERNEL = '''
import time
from dataclasses import replace

from paretotune.kernels.bundled.softmax import _inputs, triton_softmax


def hanging_inputs(shape, device, seed):
    if str(device).startswith("cuda"):
        time.sleep(600)
    return _inputs(shape, device, seed)


kernel = replace(triton_softmax, inputs=hanging_inputs)
'''


def test_limit_scales_with_the_baseline_within_its_bounds() -> None:
    ev = EvaluationSpec(measure_timeout_s=60, measure_timeout_vs_baseline=20, measure_timeout_min_s=10)
    assert measure_time_limit(ev, None) == 60  # before the baseline is measured
    assert measure_time_limit(ev, 0.3) == 10  # 6 s, floored
    assert measure_time_limit(ev, 1.5) == 30
    assert measure_time_limit(ev, 9.0) == 60  # 180 s, capped
    assert measure_time_limit(EvaluationSpec(measure_timeout_s=60, measure_timeout_vs_baseline=0), 0.3) == 60


def test_a_hanging_candidate_is_cut_off_at_the_given_limit_naming_its_phase(tmp_path: Path) -> None:
    (tmp_path / "hanging.py").write_text(HANGING_KERNEL)
    text = (f"name: hang\nkernel: {{source: {tmp_path / 'hanging.py'}:kernel}}\n"
            "shapes: [{name: s, M: 64, N: 256}]\nobjectives: [runtime]\n")
    campaign = campaign_from_text(text, tmp_path / "campaign.yaml")
    gpu = GpuWorker(measure_request(campaign), find_ptxas(), timeout_s=600, spares=0)
    try:
        start = time.monotonic()
        status, reason = gpu.run(GpuJob(candidate_id=1, config={"num_warps": 4, "num_stages": 1}, acf_path=None,
                                        seed=1), n_shapes=1, timeout_s=3)
        waited = time.monotonic() - start - gpu.last_start_s
        assert status == "timeout"
        assert reason == "GPU measurement timed out after 3 s (s: building and checking on fresh inputs)", reason
        assert waited < 30  # the per-call limit, not the worker's 600 s
        assert gpu.restarts == 1 and gpu._proc is None  # the hung worker was killed
    finally:
        gpu.stop()


def test_the_wall_clock_cuts_a_measurement_and_starts_none_after_it(tmp_path: Path) -> None:
    """With the campaign's wall clock (``cut_at``) nearer than the candidate's limit, a hanging measurement is
    cut there, recorded as cut with its phase; past it, a candidate is not sent to the GPU at all."""
    from paretotune.measure.gpu import CUT_MEASUREMENT, LocalGpuMeasurer
    from paretotune.records import TrialRecord

    (tmp_path / "hanging.py").write_text(HANGING_KERNEL)
    text = (f"name: hang\nkernel: {{source: {tmp_path / 'hanging.py'}:kernel}}\n"
            "shapes: [{name: s, M: 64, N: 256}]\nobjectives: [runtime]\nevaluation: {gpu_spares: 0}\n")
    campaign = campaign_from_text(text, tmp_path / "campaign.yaml")
    measurer = LocalGpuMeasurer(measure_request(campaign), find_ptxas(),
                                run=None)  # type: ignore[arg-type]  # no ACF: unused
    rec = TrialRecord(candidate_id=1, generation=1, config={"num_warps": 4, "num_stages": 1}, acf=None,
                      is_baseline=False, status="ok")
    try:
        measurer.gpu._start()  # ready first: the cut below is then all the job's
        assert measurer._limit_s == 60  # no baseline yet: the campaign's measure_timeout_s
        measurer.cut_at = time.monotonic() + 3
        start = time.monotonic()
        cut = measurer._measure(rec)
        assert cut.status == "failed" and time.monotonic() - start < 30
        assert cut.payload == CUT_MEASUREMENT + " (s: building and checking on fresh inputs)", cut.payload
        restarts = measurer.gpu.restarts
        late = measurer._measure(rec)  # the cut has passed
        assert late.status == "failed" and late.payload == CUT_MEASUREMENT
        assert measurer.gpu.restarts == restarts  # nothing was sent
    finally:
        measurer.gpu.stop()


def test_a_resumed_run_scales_the_limit_from_its_stored_baseline(tmp_path: Path) -> None:
    """The baseline is not measured again on resume: its stored measurement sets the candidates' limit."""
    from paretotune.campaign.resolve import make_objectives
    from paretotune.runner.evaluator import evaluator_for
    from paretotune.records import TrialRecord
    from paretotune.runner.start import start_run

    text = "name: r\nkernel: {source: paretotune.kernels.bundled.softmax:triton_softmax}\n" \
           "shapes: [{name: s, M: 64, N: 256}]\nobjectives: [runtime]\n"
    campaign = campaign_from_text(text, tmp_path / "campaign.yaml")
    ptxas = find_ptxas()
    run = start_run(campaign, tmp_path / "run", ptxas, 0)

    def candidate_limit() -> float:
        evaluator = evaluator_for(campaign, ptxas, run, make_objectives(campaign))  # no process starts here
        try:
            return evaluator.measurer._limit_s
        finally:
            evaluator.close()

    assert candidate_limit() == 60  # nothing measured yet: measure_timeout_s
    run.append(TrialRecord(candidate_id=0, generation=0, config={}, acf=None, is_baseline=True, status="ok",
                           values={"runtime": 0.01}, measure_s=1.6, stages={"gpu_start_s": 0.1}))
    assert candidate_limit() == 30  # 20 x 1.5 s


def _stuck_on_the_gpu(conn: Any) -> None:
    """A GPU worker's side of one job whose kernel never finishes: it builds, launches, then waits on the GPU
    for ever (what a hung ACF candidate does), announcing each phase as :func:`serve` does."""
    conn.send(("ready", None))
    conn.recv()
    conn.send(("phase", ("s: building and checking on fresh inputs", "build")))
    time.sleep(0.3)
    conn.send(("phase", ("s: waiting for the GPU to finish the checked launch", "gpu")))
    time.sleep(600)


def test_a_candidate_stuck_on_the_gpu_is_cut_at_its_gpu_wait_limit_not_the_job_limit() -> None:
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_stuck_on_the_gpu, args=(child,), daemon=True)
    proc.start()
    gpu = GpuWorker.__new__(GpuWorker)  # the parent's handle around a child of this test's (no campaign)
    gpu.timeout_s, gpu.spares, gpu._spares, gpu.restarts, gpu.last_start_s = 600, 0, [], 0, 0.0
    gpu._proc, gpu._conn = proc, parent
    assert parent.recv() == ("ready", None)
    start = time.monotonic()
    status, reason = gpu.run(GpuJob(1, {}, None, 1), n_shapes=1, timeout_s=600,
                             phase_limits={"gpu": 1.0, "timing": 2.0})
    waited = time.monotonic() - start
    assert status == "timeout"
    assert reason.startswith("hung: s: waiting for the GPU to finish the checked launch took over 1.0 s"), reason
    assert 1.0 <= waited < 5  # the build phase's 0.3 s, then the GPU wait's 1 s: not 600
    assert not proc.is_alive() and gpu.restarts == 1  # killed, to be replaced by a spare


def test_phase_limits_scale_from_the_baseline_phases_with_a_floor_of_about_a_second() -> None:
    from paretotune.build.base import BUILD_FLOOR_S, GPU_WAIT_FLOOR_S, TIMING_FLOOR_S, phase_limits
    from paretotune.records import TrialRecord

    ev = EvaluationSpec(measure_timeout_s=60, measure_timeout_vs_baseline=20)
    base = TrialRecord(candidate_id=0, generation=0, config={}, acf=None, is_baseline=True, status="ok")
    assert phase_limits(ev, None) is None  # before the baseline: only the job's limit
    quick = {"s": {"phase_max_s": {"build": 4.0, "gpu": 0.002, "timing": 0.3}}}
    assert phase_limits(ev, base, quick) == {"gpu": GPU_WAIT_FLOOR_S, "timing": 6.0, "build": 20.0}
    slow = {"a": {"phase_max_s": {"gpu": 0.01, "timing": 0.05}}, "b": {"phase_max_s": {"gpu": 0.2, "timing": 9.0}}}
    assert phase_limits(ev, base, slow) == {"gpu": 4.0, "timing": 60.0}  # the longest shape's; capped
    assert phase_limits(ev, base, {"s": {"phase_max_s": {"build": 0.3, "gpu": 0.01}}})["build"] == BUILD_FLOOR_S
    assert phase_limits(ev, base, {"s": {"phase_max_s": {"gpu": 0.0, "timing": 0.01}}})["timing"] == TIMING_FLOOR_S
    stored = TrialRecord(candidate_id=0, generation=0, config={}, acf=None, is_baseline=True, status="ok",
                         extra=quick)  # a resumed run: the stored baseline's phases
    assert phase_limits(ev, stored) == phase_limits(ev, base, quick)
    assert phase_limits(EvaluationSpec(measure_timeout_vs_baseline=0), base, quick) is None


def test_time_waiting_on_a_hung_candidate_is_lost_not_busy() -> None:
    from paretotune.records import TrialRecord
    from paretotune.runner.gpu_busy import search_timing

    def rec(i: int, measure_s: float, **stages: float) -> TrialRecord:
        return TrialRecord(candidate_id=i, generation=1, config={}, acf=None, is_baseline=False,
                           status="ok" if not stages else "failed", measure_s=measure_s, stages=stages)

    timing = search_timing([rec(1, 0.5), rec(2, 1.2, gpu_lost_s=1.2), rec(3, 2.0, gpu_start_s=0.5, gpu_lost_s=1.1),
                            rec(4, 0.5)], wall_s=10.0)
    assert timing["gpu_busy_s"] == 0.5 + 0.4 + 0.5  # candidate 3: 2.0 less 0.5 waiting for a spare, less 1.1 lost
    assert timing["gpu_lost_s"] == 2.3 and timing["hung_candidates"] == 2
    assert timing["gpu_busy_fraction"] == 0.14


def test_the_measurer_records_a_timed_out_candidate_s_wait_as_lost(tmp_path: Path) -> None:
    from paretotune.measure.gpu import LocalGpuMeasurer
    from paretotune.records import TrialRecord

    text = "name: r\nkernel: {source: paretotune.kernels.bundled.softmax:triton_softmax}\n" \
           "shapes: [{name: s, M: 64, N: 256}]\nobjectives: [runtime]\n"
    measurer = LocalGpuMeasurer(measure_request(campaign_from_text(text, tmp_path / "campaign.yaml")), find_ptxas(),
                                run=None)  # type: ignore[arg-type]

    class Hangs:
        last_start_s = 0.25

        def run(self, *args: Any) -> tuple[str, str]:
            time.sleep(0.3)
            return "timeout", "hung: s: waiting for the GPU to finish the checked launch took over 1.0 s"

    measurer.gpu = Hangs()  # type: ignore[assignment]
    out = measurer._measure(TrialRecord(candidate_id=1, generation=1, config={}, acf=None, is_baseline=False,
                                        status="ok"))
    assert out.status == "failed" and out.payload.startswith("hung: ")
    assert 0.0 < out.record.stages["gpu_lost_s"] < out.record.measure_s  # the spare's wait is not lost time


def _paired(i: int, baseline_ms: float) -> Any:
    from paretotune.records import TrialRecord

    return TrialRecord(candidate_id=i, generation=1, config={}, acf=None, is_baseline=False, status="ok",
                       extra={"s": {"baseline_ms": baseline_ms, "runtime_ms": baseline_ms}})


def test_a_drifting_paired_baseline_exceeds_its_noise_floor_and_a_noisy_steady_one_does_not() -> None:
    import random

    from paretotune.runner.gpu_busy import baseline_drift

    rng = random.Random(0)
    steady = [_paired(i, 0.020 * (1 + rng.gauss(0, 0.01))) for i in range(1, 61)]
    drifting = [_paired(i, 0.020 * (1 + 0.002 * i + rng.gauss(0, 0.002))) for i in range(1, 61)]  # +12 % over the run
    calm = baseline_drift(steady)["s"]
    moved = baseline_drift(drifting)["s"]
    assert not calm["exceeds"] and calm["timings"] == 60
    assert moved["exceeds"] and moved["spread_pct"] > 8 > moved["noise_floor_pct"]
    assert baseline_drift(steady[:4]) == {}  # too few timings to say


def test_host_load_is_sampled_while_the_search_runs() -> None:
    from paretotune.runner.gpu_busy import HostLoad

    load = HostLoad(every_s=0.05).start()
    time.sleep(0.2)
    load.stop()
    summary = load.summary()
    assert summary["samples"] >= 2 and summary["cpus"] >= 1 and summary["load_max"] >= summary["load_mean"] >= 0
    assert summary["usable_cpus"] == len(os.sched_getaffinity(0)) <= summary["cpus"]
