"""Fronts and crowding against a brute-force O(n^2) dominance check."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymoo.operators.survival.rank_and_crowding.metrics import calc_crowding_distance

from paretotune.pareto import crowding_distances, pareto_ranks, rank_fronts
from paretotune.pareto.table import minimization_matrix

VALUES = [0.0, 1.0, 2.0, 3.0, math.nan, math.inf]  # few values: ties and duplicates are common


@st.composite
def tables(draw: st.DrawFn) -> tuple[pd.DataFrame, dict[str, str]]:
    m = draw(st.integers(1, 4))
    n = draw(st.integers(0, 30))
    directions = {f"o{j}": draw(st.sampled_from(["min", "max"])) for j in range(m)}
    rows = []
    for i in range(n):
        row = {"candidate_id": i, "status": draw(st.sampled_from(["ok"] * 5 + ["failed"])), "error": ""}
        for column in directions:
            row[column] = draw(st.sampled_from(VALUES[:4] * 4 + VALUES[4:]))
        rows.append(row)
    frame = pd.DataFrame(rows, columns=["candidate_id", "status", "error", *directions])
    return frame, directions


def brute_force_fronts(frame: pd.DataFrame, directions: dict[str, str]) -> dict[int, int]:
    """candidate_id -> front by peeling: repeatedly take the rows no remaining row dominates."""
    points = {}
    for _, row in frame.iterrows():
        values = [row[c] for c in directions]
        if row["status"] == "ok" and all(math.isfinite(v) for v in values):
            signs = [1.0 if directions[c] == "min" else -1.0 for c in directions]
            points[int(row["candidate_id"])] = [s * v for s, v in zip(signs, values, strict=True)]

    def dominates(a: list[float], b: list[float]) -> bool:
        return all(x <= y for x, y in zip(a, b, strict=True)) and any(x < y for x, y in zip(a, b, strict=True))

    fronts: dict[int, int] = {}
    remaining = set(points)
    k = 0
    while remaining:
        layer = {i for i in remaining if not any(dominates(points[j], points[i]) for j in remaining)}
        fronts.update(dict.fromkeys(layer, k))
        remaining -= layer
        k += 1
    return fronts


@settings(max_examples=150, deadline=None)
@given(tables())
def test_fronts_match_brute_force(case: tuple[pd.DataFrame, dict[str, str]]) -> None:
    frame, directions = case
    ranking = rank_fronts(frame, directions)
    expected = brute_force_fronts(frame, directions)
    got = dict(zip(ranking.ranked["candidate_id"], ranking.ranked["front"], strict=True))
    assert got == expected
    assert set(ranking.excluded["candidate_id"]) == set(frame["candidate_id"]) - set(expected)
    assert ranking.excluded["reason"].str.len().gt(0).all()
    assert ranking.n_fronts == (max(expected.values()) + 1 if expected else 0)


@settings(max_examples=100, deadline=None)
@given(tables(), st.randoms(use_true_random=False))
def test_order_and_crowding_invariants(case: tuple[pd.DataFrame, dict[str, str]], rnd: object) -> None:
    frame, directions = case
    ranking = rank_fronts(frame, directions)
    ranked = ranking.ranked
    # sorted by front, then crowding descending
    assert (np.diff(ranked["front"].to_numpy()) >= 0).all()
    for _, group in ranked.groupby("front"):
        crowding = group["crowding"].to_numpy()
        assert (crowding[:-1] >= crowding[1:]).all()
        # duplicates share crowding
        keyed = group.groupby(list(directions))["crowding"].nunique()
        assert (keyed == 1).all()
    # the array-level functions agree with the DataFrame one
    points = minimization_matrix(ranked, directions)
    np.testing.assert_array_equal(pareto_ranks(points), ranked["front"].to_numpy())
    np.testing.assert_array_equal(crowding_distances(points, ranked["front"].to_numpy()),
                                  ranked["crowding"].to_numpy())
    # row order does not matter
    shuffled = frame.sample(frac=1.0, random_state=rnd.randint(0, 2**31))  # type: ignore[attr-defined]
    again = rank_fronts(shuffled, directions).ranked.set_index("candidate_id")
    base = ranked.set_index("candidate_id")
    pd.testing.assert_series_equal(base["front"], again.loc[base.index, "front"])
    pd.testing.assert_series_equal(base["crowding"], again.loc[base.index, "crowding"])


def test_crowding_matches_pymoo_on_distinct_points() -> None:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.random((60, 3)), columns=["a", "b", "c"])
    frame.insert(0, "candidate_id", range(60))
    ranking = rank_fronts(frame, {"a": "min", "b": "min", "c": "min"})
    for _, front in ranking.ranked.groupby("front"):
        if len(front) <= 2:
            assert np.isinf(front["crowding"]).all()
            continue
        expected = calc_crowding_distance(front[["a", "b", "c"]].to_numpy())
        np.testing.assert_allclose(front["crowding"].to_numpy(), expected)


def test_mixed_directions_example() -> None:
    frame = pd.DataFrame({
        "candidate_id": [0, 1, 2, 3, 4, 5],
        "status": ["ok", "ok", "ok", "ok", "failed", "ok"],
        "error": ["", "", "", "", "ptxas: bad ACF", ""],
        "runtime": [1.0, 0.8, 0.8, 0.9, 0.1, np.nan],
        "occupancy": [0.5, 0.5, 0.5, 0.75, 1.0, 1.0],
    })
    ranking = rank_fronts(frame, {"runtime": "min", "occupancy": "max"})
    fronts = dict(zip(ranking.ranked["candidate_id"], ranking.ranked["front"], strict=True))
    assert fronts == {1: 0, 2: 0, 3: 0, 0: 1}  # 1 and 2 are duplicates, 3 trades runtime for occupancy
    reasons = dict(zip(ranking.excluded["candidate_id"], ranking.excluded["reason"], strict=True))
    assert reasons == {4: "status=failed: ptxas: bad ACF", 5: "no finite value for runtime"}
    assert list(ranking.front(0)["candidate_id"]) == [1, 2, 3]  # all extremes (2 distinct points): id order


def test_empty_and_bad_directions() -> None:
    empty = rank_fronts(pd.DataFrame({"candidate_id": [], "x": []}), {"x": "min"})
    assert empty.ranked.empty and empty.n_fronts == 0
    with pytest.raises(ValueError, match="directions\\['x'\\]"):
        rank_fronts(pd.DataFrame({"x": [1.0]}), {"x": "minimize"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="no objective columns"):
        rank_fronts(pd.DataFrame({"x": [1.0]}), {})


def test_missing_column_excludes_everything() -> None:
    frame = pd.DataFrame({"candidate_id": [0, 1], "status": ["failed", "failed"], "error": ["oom", "oom"]})
    ranking = rank_fronts(frame, {"runtime": "min"})
    assert ranking.ranked.empty and len(ranking.excluded) == 2
