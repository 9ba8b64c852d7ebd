"""The report's summary says how a run's runtimes were measured: clock per shape, drift, hung time, host load."""
from __future__ import annotations

from paretotune.records import TrialRecord
from paretotune.report.summary import measurement_lines
from paretotune.runner.gpu_busy import search_timing, shape_clocks


def test_measurement_lines_name_the_clock_the_drift_the_hung_time_and_the_load() -> None:
    records = [TrialRecord(candidate_id=1, generation=1, config={}, acf=None, is_baseline=False, status="ok",
                           measure_s=1.0, extra={"s": {"timing": "cudagraph", "timing_source": "GPU time (CUPTI) 19.0 "
                                                       "us per call, under the short-call bound",
                                                       "authors_timing": "events", "baseline_ms": 0.019}}),
               TrialRecord(candidate_id=2, generation=1, config={}, acf=None, is_baseline=False, status="failed",
                           measure_s=1.3, stages={"gpu_lost_s": 1.3})]
    meta = {"timing": [{"clocks": shape_clocks(records), **search_timing(records, 10.0),
                        "baseline_drift": {"s": {"timings": 40, "median_ms": 0.019, "spread_pct": 7.5,
                                                 "noise_floor_pct": 2.0, "exceeds": True}},
                        "host_load": {"cpus": 16, "load_mean": 11.5, "load_max": 13.0, "samples": 30}}]}
    lines = measurement_lines(meta)
    assert lines[0].startswith("s: ranked by cudagraph (GPU time (CUPTI)") and "authors time it with events" in lines[0]
    assert "spread 7.5 % over 40 timings, above its noise floor" in lines[1]
    assert lines[2] == "1 candidate(s) hung on the GPU: 1.3 s lost (not counted as GPU busy)"
    assert lines[3] == "host load while measuring: mean 11.5, peak 13.0 on 16 CPUs"
    meta["timing"][0]["host_load"] |= {"cpus": 128, "usable_cpus": 16}  # one GPU's share of an 8-GPU host
    assert measurement_lines(meta)[3] == ("host load while measuring: mean 11.5, peak 13.0 on 128 CPUs "
                                          "(this run pinned to 16)")
    assert measurement_lines({}) == []


def test_a_timed_call_that_runs_more_than_one_gpu_activity_is_named_in_the_summary() -> None:
    def record(work: list[str]) -> TrialRecord:
        return TrialRecord(candidate_id=1, generation=1, config={}, acf=None, is_baseline=True, status="ok",
                           measure_s=1.0, extra={"s": {"timing": "cupti", "timing_source": "GPU time (CUPTI)",
                                                       "gpu_work": work}})

    lines = measurement_lines({"timing": [{"clocks": shape_clocks([record(["_quant", "to_copy", "Cat"])])}]})
    assert lines[1] == "s: each timed call runs 3 GPU activities, all of them timed: _quant, to_copy, Cat"
    assert len(measurement_lines({"timing": [{"clocks": shape_clocks([record(["_quant"])])}]})) == 1
