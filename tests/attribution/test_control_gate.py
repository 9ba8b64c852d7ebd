"""The two-sided control gate, the noise-floor rule and the three-ratio attribution, on synthetic timings."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from paretotune.validate.worker import CONTROL_ID
from paretotune.validate.validation import judge_measured, twin_arms, winners
from paretotune.pareto.stats import Thresholds, attribute, compare, judge_control


def timings(mean: float, sd: float, n: int = 30, seed: int = 0) -> list[float]:
    return list(np.random.default_rng(seed).normal(mean, sd, n))


def test_a_control_two_percent_slower_is_unreliable() -> None:
    base = timings(0.200, 0.0004, seed=1)
    control = timings(0.204, 0.0004, seed=2)  # 2 % slower: the one-sided test of old called this "not faster"
    check = judge_control(base, control)
    assert not check.reliable
    assert check.p_value < 1e-10 and check.ci_high < 1
    assert "slower" in check.reason and "\n" not in check.reason
    assert check.deviation == pytest.approx(1 - np.mean(base) / np.mean(control))


def test_a_control_two_percent_faster_is_unreliable_too() -> None:
    check = judge_control(timings(0.204, 0.0004, seed=1), timings(0.200, 0.0004, seed=2))
    assert not check.reliable and "faster" in check.reason


def test_a_symmetric_noisy_control_passes_and_measures_the_floor() -> None:
    base, control = timings(0.200, 0.004, seed=3), timings(0.200, 0.004, seed=4)
    check = judge_control(base, control)
    assert check.reliable and check.reason == ""
    assert check.ci_low <= 1 <= check.ci_high
    assert check.floor == pytest.approx(max(1 - check.ci_low, check.ci_high - 1))
    assert check.deviation_low == 0 and check.deviation <= check.floor


def test_the_floor_raises_the_bar_for_a_winner() -> None:
    base, cand = timings(0.200, 0.0004, seed=5), timings(0.1985, 0.0004, seed=6)  # ~0.75 % faster
    plain = compare(base, cand)
    assert plain.significant, plain.failed
    floored = compare(base, cand, thresholds=Thresholds(noise_floor=0.01))
    assert not floored.significant
    assert any("noise floor" in f for f in floored.failed)
    assert floored.ci_low == plain.ci_low  # the floor moves the bar, not the interval


def test_attribution_splits_the_speedup_exactly() -> None:
    base, twin, cand = timings(0.30, 0.001, seed=7), timings(0.25, 0.001, seed=8), timings(0.245, 0.001, seed=9)
    a = attribute(base, twin, cand)
    assert a.total.speedup == pytest.approx(np.mean(base) / np.mean(cand))
    assert a.config_only.speedup == pytest.approx(np.mean(base) / np.mean(twin))
    assert a.acf_only.speedup == pytest.approx(np.mean(twin) / np.mean(cand))
    assert a.total.speedup == pytest.approx(a.config_only.speedup * a.acf_only.speedup)
    assert a.acf_only.significant and a.config_only.speedup > 1.15


def measured(control_mean: float, *, seed: int = 0) -> dict:
    return {"wide": {"samples": {"baseline": timings(0.30, 0.0006, seed=seed),
                                 str(CONTROL_ID): timings(control_mean, 0.0006, seed=seed + 1),
                                 "7": timings(0.245, 0.0006, seed=seed + 2),  # candidate with an ACF
                                 "-2": timings(0.25, 0.0006, seed=seed + 3),  # its twin (no ACF)
                                 "9": timings(0.29, 0.0006, seed=seed + 4)},  # a no-ACF candidate
                     "errors": {}}}


def test_a_reliable_control_gives_three_ratios_per_candidate() -> None:
    table, controls = judge_measured(measured(0.30), {7: -2}, {-2}, alpha=0.01, min_effect=0.5)
    assert controls["wide"]["reliable"]
    row = table[table["candidate_id"] == 7].iloc[0]
    assert row["role"] == "candidate" and row["significant"] and row["twin_id"] == -2
    assert row["speedup"] == pytest.approx(row["config_speedup"] * row["acf_speedup"])
    assert row["acf_speedup"] == pytest.approx(1.02, abs=0.005) and row["acf_ci_low"] > 1
    assert row["noise_floor"] == pytest.approx(controls["wide"]["floor"])
    assert table.loc[table["candidate_id"] == -2, "role"].item() == "twin"
    no_acf = table[table["candidate_id"] == 9].iloc[0]
    assert math.isnan(no_acf["acf_speedup"]) and math.isnan(no_acf["twin_id"])  # no ACF: no share, not 1.000x
    assert winners(table) == [7, 9]


def test_a_control_off_by_two_percent_voids_every_verdict() -> None:
    table, controls = judge_measured(measured(0.306), {7: -2}, {-2}, alpha=0.01, min_effect=0.5)
    assert not controls["wide"]["reliable"]
    assert not table.loc[table["role"] != "control", "significant"].any()
    assert table.loc[table["role"] == "control", "significant"].item()  # flagged, as the report reads it
    assert winners(table) == []


def test_a_small_significant_control_bias_sets_the_floor_instead_of_voiding_the_shape() -> None:
    # the H200 case (rms_norm M589824_N256, 2026-12-03): a control 0.26 % slower at p=0.001 on tight samples
    base, control = timings(0.150, 0.0002, seed=11), timings(0.1504, 0.0002, seed=12)
    strict = judge_control(base, control, thresholds=Thresholds(max_control_bias=0.0))
    assert not strict.reliable and not strict.biased and "over the 0.00% a bias may be" in strict.reason
    check = judge_control(base, control)  # the default bound, 0.5 %
    assert check.reliable and check.biased and check.reason == ""
    assert check.ci_high < 1 and check.p_value < 0.01  # it does differ ...
    assert check.deviation < check.floor <= 0.005  # ... and its CI's far end is the floor a winner must clear
    assert check.floor == pytest.approx(1 - check.ci_low)


def test_a_biased_control_keeps_the_verdicts_that_clear_its_floor_only() -> None:
    data = measured(0.3008)  # a 0.27 % slower control
    data["wide"]["samples"]["5"] = timings(0.2995, 0.0006, seed=20)  # 0.17 % faster: inside the bias
    table, controls = judge_measured(data, {7: -2}, {-2}, alpha=0.01, min_effect=0.5)
    assert controls["wide"]["reliable"] and controls["wide"]["biased"]
    assert not table.loc[table["role"] == "control", "significant"].item()  # not flagged: the shape is judged
    assert winners(table) == [7, 9]
    small = table[table["candidate_id"] == 5].iloc[0]
    assert small["speedup"] > 1 and not small["significant"] and "noise floor" in small["failed"]
    void, _ = judge_measured(data, {7: -2}, {-2}, alpha=0.01, min_effect=0.5, max_control_bias=0.0)
    assert winners(void) == []


def test_twin_arms_reuse_the_control_and_recorded_twins() -> None:
    import pandas as pd

    results = pd.DataFrame([
        {"candidate_id": 0, "config": '{"num_warps": 4}', "acf": "", "is_baseline": True, "status": "ok"},
        {"candidate_id": 5, "config": '{"num_warps": 16}', "acf": "", "is_baseline": False, "status": "ok"}])
    chosen = [{"candidate_id": 1, "config": {"num_warps": 4}, "acf_path": "a.acf"},
              {"candidate_id": 2, "config": {"num_warps": 16}, "acf_path": "b.acf"},
              {"candidate_id": 3, "config": {"num_warps": 32}, "acf_path": "c.acf"},
              {"candidate_id": 4, "config": {"num_warps": 32}, "acf_path": "d.acf"},
              {"candidate_id": 6, "config": {"num_warps": 8}, "acf_path": None}]
    arms, twin_of = twin_arms(chosen, results, {"num_warps": 4})
    assert twin_of == {1: CONTROL_ID, 2: 5, 3: -2, 4: -2}
    assert [(a["candidate_id"], a["config"], a["acf_path"]) for a in arms] == \
        [(5, {"num_warps": 16}, None), (-2, {"num_warps": 32}, None)]


def test_validate_prints_no_share_for_a_candidate_without_an_acf() -> None:
    from paretotune.commands.validate import render

    table, controls = judge_measured(measured(0.30), {7: -2}, {-2}, alpha=0.01, min_effect=0.5)
    table["acf"] = [{7: "ab12"}.get(int(c), "") for c in table["candidate_id"]]
    text = render(table, controls, {"wide": {"candidate_id": 5, "config": {"num_warps": 16}, "column": "runtime",
                                             "value": 0.25, "speedup": 1.2}})
    assert re.search(r"cand 9: total 1\.03\dx .*; no ACF share \(it has no ACF\)", text), text
    line = next(s for s in text.splitlines() if "cand 7:" in s)
    assert "config-only 1.2" in line and "(twin -2) x ACF-only 1.02" in line
    assert "1.000x" not in line.split("ACF-only")[1]
    assert "best no-ACF config in the search: candidate 5 (num_warps=16), runtime 1.200x" in text


def test_validate_says_when_an_acf_is_not_shown_to_help() -> None:
    from paretotune.commands.validate import render

    helps, controls = judge_measured(measured(0.30), {7: -2}, {-2}, alpha=0.01, min_effect=0.5)
    flat = measured(0.30)
    flat["wide"]["samples"]["7"] = timings(0.25, 0.0006, seed=12)  # the same time as its twin: the ACF adds nothing
    adds_nothing, _ = judge_measured(flat, {7: -2}, {-2}, alpha=0.01, min_effect=0.5)
    for table in (helps, adds_nothing):
        table["acf"] = [{7: "ab12"}.get(int(c), "") for c in table["candidate_id"]]
    lines = [next(s for s in render(t, controls, {}).splitlines() if "cand 7:" in s) for t in (helps, adds_nothing)]
    assert "not shown to help" not in lines[0]
    assert lines[1].endswith("; the ACF not shown to help"), lines[1]
