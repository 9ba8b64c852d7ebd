"""One pick from a front: ASF with importance, and the minimum-Manhattan-distance knee."""
from __future__ import annotations

import pandas as pd
import pytest

from paretotune.pareto import asf_pick, knee_pick, rank_fronts
from paretotune.pareto.choose import knee_order

FRONT = pd.DataFrame({
    "candidate_id": [10, 11, 12, 13],
    "runtime": [1.0, 0.55, 0.4, 0.3],  # ms
    "occupancy": [1.0, 0.9, 0.5, 0.25],  # fraction, "max"
})
DIRECTIONS = {"runtime": "min", "occupancy": "max"}


def test_asf_balanced_and_weighted() -> None:
    assert asf_pick(FRONT, DIRECTIONS)["candidate_id"] == 11
    assert asf_pick(FRONT, DIRECTIONS, importance={"runtime": 100.0})["candidate_id"] == 13
    assert asf_pick(FRONT, DIRECTIONS, importance={"occupancy": 100.0})["candidate_id"] == 10


def test_knee() -> None:
    assert knee_pick(FRONT, DIRECTIONS)["candidate_id"] == 11


def test_ties_go_to_lowest_id_and_scale_does_not_matter() -> None:
    front = pd.DataFrame({"candidate_id": [5, 3, 4], "a": [0.0, 1.0, 1.0], "b": [1.0, 0.0, 0.0]})
    assert asf_pick(front, {"a": "min", "b": "min"})["candidate_id"] == 3
    scaled = FRONT.assign(runtime=FRONT["runtime"] * 1000)
    assert knee_pick(scaled, DIRECTIONS)["candidate_id"] == knee_pick(FRONT, DIRECTIONS)["candidate_id"]


def test_ties_go_to_the_simplest_build() -> None:
    """Equal points: an ACF that adds nothing ranks below its no-ACF twin, and a twin below a config that changes
    fewer knobs from the baseline's (was: the lowest candidate_id, here the ACF)."""
    base = {"num_warps": 4, "num_stages": 1}
    same = {"registers": 31.0, "occupancy": 100.0}
    front = pd.DataFrame([
        {"candidate_id": 3, "acf": "ab" * 32, "config": '{"num_stages": 1, "num_warps": 32}', **same},
        {"candidate_id": 5, "acf": "", "config": '{"num_stages": 2, "num_warps": 32}', **same},  # two knobs moved
        {"candidate_id": 7, "acf": "", "config": '{"num_stages": 1, "num_warps": 32}', **same},  # 3's twin
        {"candidate_id": 9, "acf": "", "config": '{"num_stages": 1, "num_warps": 4}', "registers": 160.0,
         "occupancy": 25.0},
    ])
    directions = {"registers": "min", "occupancy": "max"}
    assert list(knee_order(front, directions, baseline_config=base)["candidate_id"]) == [7, 5, 3, 9]
    assert knee_pick(front, directions, baseline_config=base)["candidate_id"] == 7
    assert asf_pick(front, directions, baseline_config=base)["candidate_id"] == 7
    assert list(knee_order(front, directions)["candidate_id"]) == [5, 7, 3, 9]  # no baseline: knobs not counted


def test_pick_from_a_ranking() -> None:
    frame = pd.concat([FRONT, pd.DataFrame({"candidate_id": [14], "runtime": [2.0], "occupancy": [0.1]})])
    front = rank_fronts(frame, DIRECTIONS).front(0)
    assert set(front["candidate_id"]) == {10, 11, 12, 13}
    assert asf_pick(front, DIRECTIONS)["candidate_id"] == 11


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="not among"):
        asf_pick(FRONT, DIRECTIONS, importance={"regs": 1.0})
    with pytest.raises(ValueError, match="positive"):
        asf_pick(FRONT, DIRECTIONS, importance={"runtime": 0.0})
    with pytest.raises(ValueError, match="no usable rows"):
        knee_pick(FRONT.iloc[:0], DIRECTIONS)
