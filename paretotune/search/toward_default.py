"""Configs between a tuned baseline and the compiler's default config, seeded into a search's first round.

A kernel's tuned config (an AOT heuristic's pick) fixes its tiling together with every other knob. A search that
starts from it moves one step at a time and rarely changes several non-tiling knobs at once, while the default config
changes them all but at another tiling, where it is slow. On pretuned dynamic_per_token_scaled_fp8_quant (H100,
2026-12-05) the heuristic ran 4096 × 4096 blocks with tensor descriptors and 5 stages; Helion's autotuner shipped the
same blocks and warps with every other knob at the default (pointer indexing, 1 stage), 1.15x faster than the
heuristic's config (both without an ACF, CUDA-graph replay), while paretotune's search measured the default config
(32 × 32 blocks, 0.53x by its own clock, which then also timed copies of the outputs) and the heuristic's neighbours,
never the two combined. The seeds here are that combination and each single move toward it.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The knobs that set how much work a program does and how many threads do it: kept from the tuned config in the
# combination, and never moved alone toward the default (a default tile is a poor start for a tuned kernel).
TILE_KNOBS = ("block_sizes", "reduction_loops", "num_warps")


def toward_default(tuned: Mapping[str, Any], default: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The default config with the tuned config's tiling, then the tuned config with one non-tiling knob at the
    default's value, for each knob where they differ; none equal to the tuned config or to each other."""
    tiling = {k: tuned[k] for k in TILE_KNOBS if k in tuned}
    moved = [k for k in default if k not in TILE_KNOBS and k in tuned and tuned[k] != default[k]]
    candidates = [{**dict(default), **tiling}] + [{**dict(tuned), k: default[k]} for k in moved]
    out: list[dict[str, Any]] = []
    for config in candidates:
        if config != dict(tuned) and config not in out:
            out.append(config)
    return out
