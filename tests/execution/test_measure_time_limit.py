"""A search candidate's GPU measurement is cut off at a limit scaled to the baseline's, and the timeout says
where the candidate was.

The worker test runs on a CPU: the kernel's input factory never returns for a CUDA device (as a kernel that
never finishes would hold the worker), so the job hangs in its first phase, before any CUDA call.
"""
from __future__ import annotations

import time
from pathlib import Path

from paretotune.campaign.load import campaign_from_text
from paretotune.campaign.schema import EvaluationSpec
from paretotune.execution.base import measure_time_limit
from paretotune.execution.gpu import GpuWorker
from paretotune.execution.gpu_worker import GpuJob
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
    gpu = GpuWorker(campaign, find_ptxas(), timeout_s=600, spares=0)
    try:
        start = time.monotonic()
        status, reason = gpu.run(GpuJob(candidate_id=1, config={"num_warps": 4, "num_stages": 1}, acf_path=None,
                                        seed=1), n_shapes=1, timeout_s=3)
        waited = time.monotonic() - start - gpu.last_start_s
        assert status == "failed"
        assert reason == "GPU measurement timed out after 3 s (s: building and checking on fresh inputs)", reason
        assert waited < 30  # the per-call limit, not the worker's 600 s
        assert gpu.restarts == 1 and gpu._proc is None  # the hung worker was killed
    finally:
        gpu.stop()


def test_the_wall_clock_cuts_a_measurement_and_starts_none_after_it(tmp_path: Path) -> None:
    """With the campaign's wall clock (``cut_at``) nearer than the candidate's limit, a hanging measurement is
    cut there, recorded as cut with its phase; past it, a candidate is not sent to the GPU at all."""
    from paretotune.execution.gpu import CUT_MEASUREMENT, LocalGpuMeasurer
    from paretotune.records import TrialRecord

    (tmp_path / "hanging.py").write_text(HANGING_KERNEL)
    text = (f"name: hang\nkernel: {{source: {tmp_path / 'hanging.py'}:kernel}}\n"
            "shapes: [{name: s, M: 64, N: 256}]\nobjectives: [runtime]\nevaluation: {gpu_spares: 0}\n")
    campaign = campaign_from_text(text, tmp_path / "campaign.yaml")
    measurer = LocalGpuMeasurer(campaign, find_ptxas(), run=None)  # type: ignore[arg-type]  # no ACF: unused
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
    from paretotune.execution.select import evaluator_for
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
