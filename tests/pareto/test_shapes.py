"""The all-shapes selection: per-shape dominance of the baseline, ranked by geomean then worst speedup."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paretotune.pareto import group_by_objective, select_all_shapes, shapes_of
from paretotune.store import ObjectiveColumn

from .conftest import results_frame

RUNTIME_ONLY = [ObjectiveColumn("runtime@a", "min", "runtime", "a"),
                ObjectiveColumn("runtime@b", "min", "runtime", "b")]


def objective_columns(specs: list[dict[str, str]]) -> list[ObjectiveColumn]:
    return [ObjectiveColumn(**s) for s in specs]  # type: ignore[arg-type]


def test_grouping_uses_fields_not_names(two_shape_columns: list[dict[str, str]]) -> None:
    columns = objective_columns(two_shape_columns)
    groups = group_by_objective(columns)
    assert {k: [c.column for c in v] for k, v in groups.items()} == {
        "runtime": ["runtime@a", "runtime@b"], "occupancy": ["occupancy@a", "occupancy@b"]}
    assert shapes_of(columns) == ["a", "b"]


def test_selection_and_order(two_shape_columns: list[dict[str, str]]) -> None:
    def v(ra: float, oa: float, rb: float, ob: float) -> dict[str, float]:
        return {"runtime@a": ra, "occupancy@a": oa, "runtime@b": rb, "occupancy@b": ob}

    frame = results_frame([
        {"candidate_id": 0, "is_baseline": True, "values": v(1.0, 0.5, 2.0, 0.5)},
        {"candidate_id": 1, "values": v(0.5, 0.5, 1.0, 0.5)},  # 2x on both: geomean 2
        {"candidate_id": 2, "values": v(0.25, 0.5, 2.0, 0.75)},  # 4x and 1x (better occupancy on b): geomean 2, worst 1
        {"candidate_id": 3, "values": v(0.5, 0.5, 2.5, 0.5)},  # slower on b: out
        {"candidate_id": 4, "values": v(0.8, 0.5, 2.0, 0.5)},  # ties everything on b: out per shape, in overall
        {"candidate_id": 5, "values": v(0.1, 0.25, 0.1, 0.5)},  # lower occupancy on a: out
        {"candidate_id": 6, "status": "failed", "values": v(0.1, 1.0, 0.1, 1.0)},  # failed: never selected
        {"candidate_id": 7, "is_baseline": True, "values": v(0.9, 0.5, 1.9, 0.5)},  # re-measured baseline: never
    ])
    columns = objective_columns(two_shape_columns)
    chosen = select_all_shapes(frame, columns)
    assert chosen["candidate_id"].tolist() == [1, 2]  # equal geomean 2.0; worst shape 2.0 beats 1.0
    assert chosen["rank"].tolist() == [1, 2]
    np.testing.assert_allclose(chosen["geomean_speedup"], [2.0, 2.0])
    np.testing.assert_allclose(chosen["worst_speedup"], [2.0, 1.0])
    assert chosen.loc[1, "worst_shape"] == "b"
    np.testing.assert_allclose(chosen[["speedup@a", "speedup@b"]].to_numpy(), [[2, 2], [4, 1]])

    overall = select_all_shapes(frame, columns, per_shape=False)
    assert overall["candidate_id"].tolist() == [1, 2, 4]
    by_occupancy = select_all_shapes(frame, columns, objective="occupancy")
    assert by_occupancy["candidate_id"].tolist() == [2, 1]  # 1.5x on b vs 1x
    with pytest.raises(ValueError, match="not among"):
        select_all_shapes(frame, columns, objective="l1_hit")


def test_an_acf_that_adds_nothing_ranks_below_its_twin() -> None:
    """Equal speedups on every shape: the same config without the ACF is rank 1, the build to ship."""
    config = {"BLOCK": 128}
    frame = results_frame([
        {"candidate_id": 0, "is_baseline": True, "config": {"BLOCK": 64}, "values": {"runtime@a": 1.0,
                                                                                    "runtime@b": 2.0}},
        {"candidate_id": 1, "acf": "ab" * 32, "config": config, "values": {"runtime@a": 0.5, "runtime@b": 1.0}},
        {"candidate_id": 2, "config": config, "values": {"runtime@a": 0.5, "runtime@b": 1.0}},
    ])
    assert select_all_shapes(frame, RUNTIME_ONLY)["candidate_id"].tolist() == [2, 1]


def test_nothing_beats_the_baseline() -> None:
    frame = results_frame([
        {"candidate_id": 0, "is_baseline": True, "values": {"runtime@a": 1.0, "runtime@b": 1.0}},
        {"candidate_id": 1, "values": {"runtime@a": 1.1, "runtime@b": 0.5}},
    ])
    chosen = select_all_shapes(frame, RUNTIME_ONLY)
    assert chosen.empty and "speedup@a" in chosen.columns


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.5, 0.8, 1.0, 1.2]), st.sampled_from([0.5, 0.8, 1.0, 1.2])),
                max_size=25))
def test_selection_matches_brute_force(values: list[tuple[float, float]]) -> None:
    rows = [{"candidate_id": 0, "is_baseline": True, "values": {"runtime@a": 1.0, "runtime@b": 1.0}}]
    rows += [{"candidate_id": i + 1, "values": {"runtime@a": a, "runtime@b": b}} for i, (a, b) in enumerate(values)]
    chosen = select_all_shapes(results_frame(rows), RUNTIME_ONLY)
    expected = [i + 1 for i, (a, b) in enumerate(values) if a < 1.0 and b < 1.0]  # one column per shape
    assert sorted(chosen["candidate_id"]) == expected
    keys = list(zip(-chosen["geomean_speedup"], -chosen["worst_speedup"], chosen["candidate_id"], strict=True))
    assert keys == sorted(keys)
    if expected:
        np.testing.assert_allclose(chosen["geomean_speedup"],
                                   np.sqrt(chosen["speedup@a"] * chosen["speedup@b"]))
        assert isinstance(chosen, pd.DataFrame)
