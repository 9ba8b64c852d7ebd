"""Normalization to the baseline and hypervolume, checked against moocore and pymoo."""
from __future__ import annotations

import math

import moocore
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymoo.indicators.hv import HV

from paretotune.pareto import NoBaselineError, hypervolume, hypervolume_progress, normalize_to_baseline, ratios


def frame_with_baseline(values: np.ndarray, columns: list[str], status: list[str] | None = None) -> pd.DataFrame:
    """Row 0 is the baseline; candidate_id follows row order."""
    frame = pd.DataFrame(values, columns=columns)
    frame.insert(0, "candidate_id", np.arange(len(frame)))
    frame.insert(1, "is_baseline", np.arange(len(frame)) == 0)
    frame.insert(2, "status", status or ["ok"] * len(frame))
    return frame


def test_ratios_orientation_and_zero_baseline() -> None:
    values = np.array([[0.5, 2.0, 0.0, 3.0], [2.0, 0.0, 4.0, -1.0]])
    base = np.array([1.0, 1.0, 0.0, 0.0])
    maximize = np.array([False, True, False, True])
    out = ratios(values, base, maximize)
    np.testing.assert_allclose(out[0], [0.5, 0.5, 1.0, -2.0])  # max: b/v; zero baseline: offset form
    np.testing.assert_allclose(out[1], [2.0, math.inf, 5.0, 2.0])  # max value 0 vs positive baseline: inf
    assert np.isnan(ratios(np.array([[np.nan]]), np.array([1.0]), np.array([False]))).all()


def test_normalize_puts_baseline_at_one() -> None:
    frame = frame_with_baseline(np.array([[0.2, 0.5], [0.1, 1.0], [0.4, 0.25]]), ["runtime", "occupancy"])
    out = normalize_to_baseline(frame, {"runtime": "min", "occupancy": "max"})
    np.testing.assert_allclose(out[["runtime", "occupancy"]].to_numpy(), [[1, 1], [0.5, 0.5], [2, 2]])
    assert list(out["candidate_id"]) == [0, 1, 2]


def test_first_ok_baseline_is_the_reference() -> None:
    frame = pd.DataFrame({
        "candidate_id": [0, 1, 2, 3], "is_baseline": [True, True, False, True],
        "status": ["failed", "ok", "ok", "ok"], "runtime": [np.nan, 2.0, 1.0, 4.0],
    })
    out = normalize_to_baseline(frame, {"runtime": "min"})
    assert out["runtime"].tolist()[1:] == [1.0, 0.5, 2.0]


def test_no_baseline_is_a_user_error() -> None:
    frame = pd.DataFrame({"candidate_id": [0], "is_baseline": [False], "status": ["ok"], "x": [1.0]})
    with pytest.raises(NoBaselineError, match="no successful baseline"):
        hypervolume(frame, {"x": "min"})


@st.composite
def runs(draw: st.DrawFn) -> tuple[pd.DataFrame, dict[str, str]]:
    m = draw(st.integers(1, 4))
    n = draw(st.integers(1, 25))
    directions = {f"o{j}": draw(st.sampled_from(["min", "max"])) for j in range(m)}
    grid = st.sampled_from([0.25, 0.5, 0.75, 1.0, 1.25, 2.0])  # ties, duplicates and points equal to the baseline
    values = np.array([[1.0] * m] + [[draw(grid) for _ in range(m)] for _ in range(n)])
    status = ["ok"] + [draw(st.sampled_from(["ok", "ok", "ok", "failed"])) for _ in range(n)]
    return frame_with_baseline(values, list(directions), status), directions


def reference_points(frame: pd.DataFrame, directions: dict[str, str]) -> np.ndarray:
    """Independently normalized ok rows: v/b for min, b/v for max (the baseline row holds 1.0 here)."""
    ok = frame.loc[frame["status"] == "ok", list(directions)].to_numpy()
    base = frame.loc[0, list(directions)].to_numpy(dtype=float)
    flip = np.array([d == "max" for d in directions.values()])
    return np.where(flip, base / ok, ok / base)


@settings(max_examples=60, deadline=None)
@given(runs())
def test_hypervolume_agrees_with_moocore_and_pymoo(case: tuple[pd.DataFrame, dict[str, str]]) -> None:
    frame, directions = case
    points = reference_points(frame, directions)
    ones = np.ones(len(directions))
    got = hypervolume(frame, directions)
    assert got == pytest.approx(moocore.hypervolume(points, ref=ones), abs=1e-12)
    assert got == pytest.approx(HV(ref_point=ones)(points), abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(runs())
def test_progress_matches_prefix_hypervolume(case: tuple[pd.DataFrame, dict[str, str]]) -> None:
    frame, directions = case
    shuffled = frame.sample(frac=1.0, random_state=0)  # progress follows candidate_id, not row order
    progress = hypervolume_progress(shuffled, directions)
    assert progress["candidate_id"].tolist() == list(range(len(frame)))
    points = reference_points(frame, directions)
    ok_ids = frame.loc[frame["status"] == "ok", "candidate_id"].to_numpy()
    ones = np.ones(len(directions))
    for _, row in progress.iterrows():
        prefix = points[ok_ids <= row["candidate_id"]]
        assert row["hypervolume"] == pytest.approx(moocore.hypervolume(prefix, ref=ones), abs=1e-12)
    assert progress["hypervolume"].iloc[-1] == pytest.approx(hypervolume(frame, directions))
    assert (np.diff(progress["hypervolume"].to_numpy()) >= -1e-15).all()


def test_hypervolume_in_raw_units_for_min_objectives() -> None:
    """With only 'min' columns, ratio space is raw space scaled by the baseline: HV divides by prod(b)."""
    rng = np.random.default_rng(7)
    raw = np.vstack([[0.2, 40.0], rng.uniform([0.1, 20.0], [0.3, 60.0], size=(50, 2))])
    frame = frame_with_baseline(raw, ["runtime", "registers"])
    expected = moocore.hypervolume(raw, ref=raw[0]) / np.prod(raw[0])
    assert hypervolume(frame, {"runtime": "min", "registers": "min"}) == pytest.approx(expected)


def test_custom_reference_point() -> None:
    frame = frame_with_baseline(np.array([[1.0], [0.5], [1.5]]), ["runtime"])
    assert hypervolume(frame, {"runtime": "min"}) == pytest.approx(0.5)
    assert hypervolume(frame, {"runtime": "min"}, ref=[2.0]) == pytest.approx(1.5)


def test_progress_with_repeated_index_and_failures() -> None:
    first = frame_with_baseline(np.array([[1.0, 1.0], [0.5, 0.8]]), ["a", "b"])
    later = first.assign(candidate_id=[2, 3], is_baseline=False, status=["failed", "ok"])
    later.loc[:, ["a", "b"]] = [[0.1, 0.1], [0.8, 0.5]]
    progress = hypervolume_progress(pd.concat([first, later]), {"a": "min", "b": "min"})  # index 0, 1, 0, 1
    np.testing.assert_allclose(progress["hypervolume"], [0.0, 0.1, 0.1, 0.1 + 0.1 - 0.04])
    assert progress["status"].tolist() == ["ok", "ok", "failed", "ok"]
