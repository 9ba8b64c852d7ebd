"""The configs between a tuned baseline and Helion's default config that a Helion search's first round starts from
(:mod:`paretotune.search.toward_default`), on the real configs of pretuned dynamic_per_token_scaled_fp8_quant: its
sm90 heuristic's pick (its ``indexing`` cut to the binding's four slots, as the engine seeds it) and its ConfigSpec's
default, as the dev box binds the kernel for sm_90 (Helion 1.5.1, 2026-12-05). The engine's side, on a ConfigSpec
of the repository's own: tests/search/test_helion_engine.py."""
from __future__ import annotations

from paretotune.search.toward_default import TILE_KNOBS, toward_default

HEURISTIC = {"block_sizes": [4096, 4096], "range_unroll_factors": [0, 3, 1], "range_num_stages": [0, 0, 0],
             "range_multi_buffers": [None, True, None], "range_flattens": [None, None, True],
             "load_eviction_policies": ["", "last", "first"], "num_warps": 8, "num_stages": 5,
             "indexing": ["tensor_descriptor", "pointer", "tensor_descriptor", "tensor_descriptor"], "pid_type": "flat",
             "atomic_indexing": [], "range_warp_specializes": []}
DEFAULT = {"block_sizes": [32, 32], "range_unroll_factors": [0, 0, 0], "range_warp_specializes": [],
           "range_num_stages": [0, 0, 0], "range_multi_buffers": [None, None, None],
           "range_flattens": [None, None, None], "load_eviction_policies": ["", ""], "num_warps": 4, "num_stages": 1,
           "indexing": ["pointer", "pointer", "pointer", "pointer"], "atomic_indexing": [], "pid_type": "flat"}


def test_the_first_seed_is_the_config_helions_autotuner_shipped_on_this_kernel() -> None:
    """Helion's pick on the H100 (1.154x over the heuristic without its ACF, re-timed by CUDA graphs) was the default
    config at the heuristic's blocks and warps; paretotune's search never measured it. It is the first seed."""
    seeds = toward_default(HEURISTIC, DEFAULT)
    assert seeds[0] == {**DEFAULT, "block_sizes": [4096, 4096], "num_warps": 8}
    assert seeds[0]["indexing"] == ["pointer"] * 4 and seeds[0]["num_stages"] == 1


def test_then_one_knob_at_a_time_toward_the_default_never_a_tile_knob_alone() -> None:
    seeds = toward_default(HEURISTIC, DEFAULT)[1:]
    moved = [[k for k in HEURISTIC if s[k] != HEURISTIC[k]] for s in seeds]
    assert all(len(m) == 1 for m in moved)
    assert sorted(m[0] for m in moved) == ["indexing", "load_eviction_policies", "num_stages", "range_flattens",
                                           "range_multi_buffers", "range_unroll_factors"]
    assert not any(m[0] in TILE_KNOBS for m in moved)
    assert all(s[m[0]] == DEFAULT[m[0]] for s, m in zip(seeds, moved))


def test_nothing_is_seeded_twice_or_where_the_tuned_config_is_the_default() -> None:
    assert toward_default(DEFAULT, DEFAULT) == []
    only_stages = {**DEFAULT, "num_stages": 3, "num_warps": 8}  # the combination is the one move: seeded once
    assert toward_default(only_stages, DEFAULT) == [{**DEFAULT, "num_warps": 8}]
