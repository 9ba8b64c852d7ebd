"""A joint CompileIQ search starts around the baseline config (strategy joint seeds it, issue 17)."""
from __future__ import annotations

from paretotune.search.compileiq_engine import CompileIQEngine
from paretotune.search.space import SearchSpace

SPACE = SearchSpace(knobs={"a": list(range(16)), "b": list(range(16))}, acf="generated")


def _first_generation(seed_config: dict[str, int] | None) -> list[dict[str, int]]:
    engine = CompileIQEngine(SPACE, num_objectives=1, pool_size=40, generations=2, seed_config=seed_config)
    return [p.config for p in engine.ask()]


def test_seeded_first_generation_starts_around_the_seed() -> None:
    seeded = _first_generation({"a": 7, "b": 11})
    assert len(seeded) == 40 and all(set(c) == {"a", "b"} for c in seeded)
    # each knob is left at the seed with probability 1/2 (plus 1/16 by chance): about 21 of 40; uniform: 2.5
    assert sum(c["a"] == 7 for c in seeded) >= 12 and sum(c["b"] == 11 for c in seeded) >= 12
    assert len({(c["a"], c["b"]) for c in seeded}) > 10  # still a population, not 40 copies of the seed


def test_unseeded_first_generation_is_uniform() -> None:
    plain = _first_generation(None)
    assert sum(c["a"] == 7 for c in plain) < 12
