"""ship's baseline check against what Helion's own normalize makes of a heuristic's answer (real ConfigSpec, CPU).

The fp8 quant kernels' sm90 heuristics answer ``range_num_stages: []``; the run stores the baseline as Helion
normalized it (``[0, 0, 0]``), and ship refused both kernels as changed since the run (H200, 2026-12-03)."""
from __future__ import annotations

import helion
import helion.language as hl
import torch

from paretotune.ship.files import completes


@helion.kernel(config=helion.Config(block_sizes=[32]))
def doubled(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = x[tile, :] * 2
    return out


def normalized(answer: dict) -> dict:
    config = helion.Config(**answer)
    doubled.bind((torch.randn(64, 128),)).config_spec.normalize(config)
    return dict(config)


def test_a_list_the_heuristic_left_short_is_the_same_baseline() -> None:
    answer = {"block_sizes": [32], "range_num_stages": [], "num_warps": 4}
    stored = normalized(answer)
    assert stored["range_num_stages"] != []  # Helion pads it: the case ship refused
    assert all(completes(stored[k], v) for k, v in answer.items())


def test_a_changed_value_is_still_another_baseline() -> None:
    stored = normalized({"block_sizes": [32], "range_num_stages": [], "num_warps": 4})
    assert not completes(stored["num_warps"], 8)
    assert not completes(stored["block_sizes"], [64])
    assert not completes(stored["range_num_stages"], [3])  # an explicit value normalize kept differs
