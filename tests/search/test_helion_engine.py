"""The helion engine: Helion's own search (LFBOTreeSearch by default) over a real Helion ConfigSpec, driven by
paretotune's ask/tell, with the ACF as one more dimension of the same search.

The ConfigSpecs are real (the project's scale_rows AOT kernel and the bundled RMS norm bound to meta tensors
for sm_90, as campaigns bind them); the objective is synthetic (a function of the config with a known optimum),
so every run is deterministic and takes seconds. The loop is simulated the way the steady schedule runs: a
window of candidates in flight, each told as it "finishes", asked again after every tell.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from paretotune.campaign.user_code import import_object
from paretotune.kernels.helion import HelionAdapter, spec_from_kernel
from paretotune.kernels.helion_space import accepts, device_features
from paretotune.records import Shape
from paretotune.search.base import EngineOptions, Proposal, engine_errors
from paretotune.search.dedupe import Deduplicated
from paretotune.search.catalog import ENGINE_INFO, resolve_engine
from paretotune.search.space import SearchSpace, point_key
from paretotune.toolchain.acf_sources import AcfOption
from paretotune.toolchain.arch import TARGETS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "helion_aot"
WIDE = Shape(label="wide", params={"M": 512, "N": 4096})
ACFS = (AcfOption("", None), AcfOption("a.acf", b"A" * 64), AcfOption("b.acf", b"B" * 64))  # Helion never reads them
Objective = Callable[[dict[str, Any], bytes | None], tuple[float, ...] | None]


def scale_rows(gpu: bool = False) -> HelionAdapter:
    kernel = import_object("scale_rows.py:scale_rows", FIXTURES, "test")
    factory = import_object("scale_rows.py:inputs", FIXTURES, "test")
    adapter = HelionAdapter("scale_rows", spec_from_kernel(kernel, factory))
    adapter.use_campaign((WIDE,), TARGETS["sm_90"], gpu)
    return adapter


def rms_norm() -> HelionAdapter:
    from paretotune.kernels.bundled.helion_rms_norm import rms_norm as fn

    factory = import_object("bundled_fns.py:rms_norm_args", FIXTURES, "test")
    adapter = HelionAdapter("rms_norm", spec_from_kernel(fn, factory))
    adapter.use_campaign((Shape(label="s", params={"M": 2048, "N": 4096, "dtype": "bfloat16"}),), TARGETS["sm_90"],
                         True)
    return adapter


def synthetic(config: dict[str, Any], acf: bytes | None) -> tuple[float, ...]:
    """Known optimum 1.0: block size 16, 2 warps, ACF "B" (a runtime-like number, smaller is better)."""
    return (1.0 + abs(math.log2(config["block_sizes"][0]) - 4) + abs(math.log2(config["num_warps"]) - 1)
            + (0.0 if acf is not None and acf[:1] == b"B" else 0.5),)


def engine(adapter: HelionAdapter, acf: str = "finite", **settings: Any) -> tuple[Deduplicated, Any, SearchSpace]:
    from paretotune.search import helion_search

    space = SearchSpace(knobs=adapter.space(), acf=acf, acf_options=ACFS if acf == "finite" else (),  # type: ignore[arg-type]
                        constraint=adapter.constraint())
    shape = adapter._shapes[0]
    base = adapter.default_config(shape)
    inner = helion_search.create(space, EngineOptions(n_objectives=1, pool_size=8, generations=1, seed=3,
                                                      seed_config=base, native=adapter.native_space(),
                                                      settings={"islands": 1, **settings}))
    wrapped = Deduplicated(inner, constraint=space.constraint)
    wrapped.know_baseline(base, synthetic(base, None))
    return wrapped, inner, space


class Loop:
    """The steady schedule in miniature: up to ``window`` in flight, first in first told, ask after each tell."""

    def __init__(self, eng: Deduplicated, objective: Objective = synthetic, window: int = 6) -> None:
        self.engine, self.objective, self.window = eng, objective, window
        self.in_flight: list[Proposal] = []
        self.proposed: list[Proposal] = []
        self.told = 0

    def run(self, evaluations: int) -> None:
        while self.told < evaluations:
            while len(self.in_flight) < self.window:  # the loop's refill: ask until the window is full
                fresh = self.engine.ask()
                if not fresh:
                    break
                self.in_flight += fresh
                self.proposed += fresh
            if not self.in_flight:
                return
            p = self.in_flight.pop(0)
            self.engine.tell({p.engine_id: self.objective(p.config, p.acf)})
            self.told += 1


def test_every_proposal_is_a_point_helion_accepts_and_none_is_repeated() -> None:
    """Over Helion's ConfigSpec with tensor descriptors (a GPU campaign's space) and an ACF list: each proposal
    passes Helion's normalize unchanged, carries an ACF of the list (or none), is never the baseline (answered
    from what is known) and never a point proposed before; the search reaches the optimum."""
    adapter = scale_rows(gpu=True)
    eng, inner, _ = engine(adapter)
    loop = Loop(eng)
    loop.run(170)
    spec = adapter.config_spec(WIDE)
    with device_features(True):
        assert all(accepts(spec, p.config) for p in loop.proposed)
    assert {p.acf for p in loop.proposed} <= {o.data for o in ACFS} and len({p.acf for p in loop.proposed}) == 3
    keys = [point_key(p.config, None if p.acf is None else p.acf.hex()) for p in loop.proposed]
    assert len(keys) == len(set(keys)) and eng.rejected == 0
    base_key = point_key(adapter.default_config(WIDE), None)
    first = inner.rounds[0].calls[0]  # Helion's initial population starts from the seed (the baseline) ...
    assert any(i.key == base_key and i.engine_id is None for i in first)  # ... answered without a build
    assert min(synthetic(p.config, p.acf)[0] for p in loop.proposed) == 1.0
    assert len(inner.rounds) >= 2  # Helion's quick search ended; the next round starts from what was learnt:
    later = inner.rounds[1].plan
    assert later.train_upto > 100 and later.seeds[0][0] == adapter.default_config(WIDE) and len(later.seeds) > 1
    assert later.seed != inner.rounds[0].plan.seed
    inner.close()


def test_a_baseline_with_one_more_indexing_slot_than_this_binding_still_seeds_a_search_that_goes_on() -> None:
    """A heuristic written for another binding of a kernel can carry one more memory op's ``indexing`` than the
    ConfigSpec has (pretuned dynamic_per_token_scaled_fp8_quant: 5 against 4). Helion compiles such a config, but
    its surrogate's encoding asserted on the length, so every round stopped after its random first population and
    the search never came near the baseline (H200, 2026-12-05). The seed is cut to the spec's length: the rounds
    go on past their first population, and the cut baseline (the same Triton source: the same kernel) is answered
    from what is known, never built."""
    adapter = scale_rows(gpu=True)
    base = adapter.default_config(WIDE)
    longer = {**base, "indexing": [*base["indexing"], "tensor_descriptor"]}
    with device_features(True):
        assert adapter.triton_source(longer, WIDE) == adapter.triton_source(base, WIDE)
    eng, inner, _ = engine(adapter)
    eng.know_baseline(longer, synthetic(longer, None))
    loop = Loop(eng)
    loop.run(120)
    assert inner.errors == [] and all(r.error is None for r in inner.rounds)
    assert len(inner.rounds[0].calls) > 1  # Helion's generations after its first population
    first = inner.rounds[0].calls[0]
    assert any(i.key == point_key(base, None) and i.engine_id is None for i in first)
    assert point_key(base, None) not in {point_key(p.config, None) for p in loop.proposed if p.acf is None}
    inner.close()


def test_the_first_round_starts_from_the_baseline_and_the_configs_toward_helions_default() -> None:
    """The search's first round seeds the baseline and the configs between it and Helion's default config
    (:mod:`paretotune.search.toward_default`); each is built and measured in the first batch, without an ACF.
    scale_rows' heuristic differs from the default in num_stages (2 against 1) and num_warps (8 against 4, a tile
    knob): one seed, the heuristic at 1 stage. Where that is the optimum, the first batch finds it. Later rounds
    seed the baseline and the best results only."""
    adapter = scale_rows(gpu=True)
    base = adapter.default_config(WIDE)
    assert (base["num_stages"], base["num_warps"]) == (2, 8)
    one_stage = {**base, "num_stages": 1}

    def objective(config: dict[str, Any], acf: bytes | None) -> tuple[float, ...]:
        return (0.5,) if point_key(config, None) == point_key(one_stage, None) and acf is None else synthetic(
            config, acf)

    eng, inner, _ = engine(adapter)
    loop = Loop(eng, objective)
    loop.run(200)  # past the first round (149 proposals, maxnreg among its knobs)
    first = inner.rounds[0]
    assert [c for c, _ in first.plan.seeds] == [base, one_stage] and all(a is None for _, a in first.plan.seeds)
    built = [i for i in first.calls[0] if i.engine_id is not None]
    assert any(i.key == point_key(one_stage, None) for i in built)  # measured in the first batch
    assert len(inner.rounds) >= 2 and one_stage in [c for c, _ in inner.rounds[1].plan.seeds]  # now a best result
    assert inner.rounds[1].plan.seeds[1][0] == one_stage
    inner.close()


def test_a_configspec_without_a_default_starts_from_the_baseline_and_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Helion's ``ConfigSpec.default_config`` failing (it never has on the kernels measured) costs the first round
    its configs toward the default, not the search: it starts from the baseline and the run records why."""
    from paretotune.compat import helion as compat_helion

    def no_default(spec: Any) -> dict[str, Any]:
        raise KeyError("indexing")

    monkeypatch.setattr(compat_helion, "default_config", no_default)
    adapter = scale_rows(gpu=True)
    eng, inner, _ = engine(adapter)
    Loop(eng).run(40)
    assert [c for c, _ in inner.rounds[0].plan.seeds] == [adapter.default_config(WIDE)]
    assert engine_errors(eng) == ["KeyError in Helion's ConfigSpec.default_config: 'indexing'"]
    inner.close()


def test_an_error_inside_helions_rounds_is_named_by_the_engine_for_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fault above, injected where it was raised (Helion's ``encode_config``, a bare ``assert``): every round
    ends on it, the engine goes on, and ``engine_errors`` (what the run records and its summary prints) names each
    in one line, the exception and the function that raised it, not a bare "AssertionError:"."""
    from helion.autotuner.config_generation import ConfigGeneration

    def encode_config(self: Any, flat_config: Any) -> list[float]:
        raise AssertionError  # as Helion's own bare ``assert`` fails (pytest rewrites only the tests' asserts)

    monkeypatch.setattr(ConfigGeneration, "encode_config", encode_config)
    adapter = scale_rows(gpu=True)
    eng, inner, _ = engine(adapter)
    Loop(eng).run(60)
    lines = engine_errors(eng)  # through the Deduplicated wrapper
    assert len(inner.rounds) > 1 and len(lines) == len(inner.errors) == sum(1 for r in inner.rounds if r.error)
    assert all(line.startswith("AssertionError at ") and line.endswith("(encode_config)") for line in lines)
    inner.close()


def test_islands_and_rounds_on_another_configspec() -> None:
    """Two searches side by side on the bundled RMS norm's ConfigSpec with generated ACFs (a list of CompileIQ
    samples per round): the second fills the window while the first waits at its generation barrier, both have
    batches open at once, each with its own ACF list; proposals stay valid."""
    adapter = rms_norm()
    eng, inner, _ = engine(adapter, acf="generated", islands=2, acfs=4)
    loop = Loop(eng, window=10)
    loop.run(100)
    by_island = [p.engine_id.split(".")[0] for p in loop.proposed]
    assert by_island.count("0") > 2 * by_island.count("1") > 0  # the second only fills the leader's barriers
    assert all(r.current is not None for r in inner.rounds)  # both wait for scores at once: the GPU has work
    assert all(len(r.plan.acfs) == 5 and r.plan.acfs[0] is None for r in inner.rounds)  # none + 4 CompileIQ ACFs
    assert inner.rounds[0].plan.acfs[1:] != inner.rounds[1].plan.acfs[1:]
    spec = adapter.config_spec(adapter._shapes[0])
    with device_features(True):
        assert all(accepts(spec, p.config) for p in loop.proposed)
    assert all(p.acf is None or len(p.acf) > 1000 for p in loop.proposed)  # real sampled ACFs
    inner.close()


def test_restore_gives_the_same_proposals_as_no_interruption(tmp_path: Path) -> None:
    """Save mid-batch, build a fresh engine, restore, go on (twice: in Helion's first round, and in a later one,
    trained on the first): every proposal (ids, configs, ACFs) is the uninterrupted engine's; the batch in
    flight at each save stays in flight under the same ids."""
    adapter = scale_rows()
    eng, inner, _ = engine(adapter)
    loop = Loop(eng)
    proposed: list[Proposal] = []
    for n, stop in enumerate((45, 150, 180)):
        loop.run(stop)
        proposed += loop.proposed
        if stop == 180:
            break
        assert loop.in_flight  # the save comes with a batch in flight
        eng.save(str(tmp_path / f"engine{n}.json"))
        inner.close()
        eng, inner, _ = engine(adapter)
        eng.restore(str(tmp_path / f"engine{n}.json"))
        resumed = Loop(eng)
        resumed.in_flight, resumed.told = list(loop.in_flight), loop.told  # resume re-evaluates what was in flight
        loop = resumed
    assert len(inner.rounds) == 2 and inner.rounds[1].plan.train_upto > 100  # the second restore replayed round 1
    inner.close()

    control, control_inner, _ = engine(adapter)
    straight = Loop(control)
    straight.run(180)
    assert [(p.engine_id, p.config, p.acf) for p in proposed] == [(p.engine_id, p.config, p.acf)
                                                                   for p in straight.proposed]
    control_inner.close()


def test_auto_is_helion_for_a_joint_search_over_helions_configspec() -> None:
    """engine: auto resolves to helion only where the caller has Helion's ConfigSpec and the strategy is joint."""
    assert "helion" in ENGINE_INFO
    assert resolve_engine("auto", "joint", native=True) == "helion"
    assert resolve_engine("auto", "joint", native=False) == "compileiq"
    assert resolve_engine("auto", "sequential", native=True) == "compileiq"
    assert resolve_engine("compileiq", "joint", native=True) == "compileiq"
    assert scale_rows().native_space() is not None


def test_helion_engine_without_a_configspec_is_a_one_line_error() -> None:
    from paretotune.errors import UserError
    from paretotune.search import helion_search

    with pytest.raises(UserError, match="helion searches Helion's own ConfigSpec"):
        helion_search.create(SearchSpace(knobs={"num_warps": [4, 8]}),
                             EngineOptions(n_objectives=1, pool_size=8, generations=1, seed=0))


@pytest.mark.parametrize("algorithm", ["LFBOPatternSearch", "PatternSearch", "DifferentialEvolutionSearch",
                                       "DESurrogateHybrid", "RandomSearch"])
def test_each_of_helions_algorithms_runs_through_the_bridge(algorithm: str) -> None:
    """search.helion.algorithm: each of Helion's searches is driven the same way and proposes valid points."""
    adapter = scale_rows()
    eng, inner, _ = engine(adapter, algorithm=algorithm)
    loop = Loop(eng)
    loop.run(40)
    assert loop.told == 40 and eng.rejected == 0 and not inner.errors
    spec = adapter.config_spec(WIDE)
    with device_features(False):
        assert all(accepts(spec, p.config) for p in loop.proposed)
    inner.close()


def test_sequential_with_engine_helion_searches_configs_then_compileiq_acfs(tmp_path: Path) -> None:
    """strategy sequential, engine helion: Helion's search without ACFs first (it hears of the baseline: its
    reference, never re-proposed), CompileIQ over ACFs at the winner."""
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter
    from paretotune.runner.start import make_engine
    from paretotune.search.helion_search import HelionSearchEngine
    from paretotune.search.sequential import SequentialEngine

    path = tmp_path / "c.yaml"
    path.write_text(f"name: t\nkernel: {{source: {FIXTURES}/scale_rows.py:scale_rows, "
                    f"inputs: {FIXTURES}/scale_rows.py:inputs}}\n"
                    "shapes: [{name: wide, M: 512, N: 4096}]\nobjectives: [registers]\n"
                    "acf: {search_space: ptxas-13.3}\nsearch: {engine: helion, strategy: sequential, pool_size: 6}\n")
    campaign = load_campaign(path)
    adapter = make_adapter(campaign)
    eng = make_engine(campaign, adapter, 1)
    assert isinstance(eng, SequentialEngine)
    helion = eng._phase1.inner
    assert isinstance(helion, HelionSearchEngine) and not helion._lists.searched  # configs only
    base = adapter.default_config(WIDE)
    eng.know_baseline(base, (40.0,))
    assert helion.reference == [40.0]
    batch = eng.ask()
    assert batch and all(p.acf is None for p in batch)
    assert point_key(base, None) not in {point_key(p.config, None) for p in batch}
    phase2 = eng._make_phase2(base)
    assert type(phase2.inner).__name__ == "CompileIQEngine"
    helion.close()


def test_a_checkpoint_that_does_not_replay_starts_the_search_afresh(tmp_path: Path) -> None:
    """A log Helion's search does not reproduce (another Helion, an edited file): restore says so and raises
    NotImplementedError, on which resume goes on with a fresh engine rather than a wrong one."""
    import json

    eng, inner, _ = engine(scale_rows())
    Loop(eng).run(40)
    eng.save(str(tmp_path / "engine.json"))
    inner.close()
    state = json.loads((tmp_path / "engine.json").read_text())
    state["rounds"][0]["seed"] += 1  # the same round from another seed proposes other configs
    (tmp_path / "engine.json").write_text(json.dumps(state))
    again, again_inner, _ = engine(scale_rows())
    with pytest.warns(RuntimeWarning, match="cannot replay"), pytest.raises(NotImplementedError):
        again.restore(str(tmp_path / "engine.json"))


def test_a_waiting_round_leaves_the_callers_environment_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """Helion's autotune patches os.environ for its whole run (helion 1.5.1: TRITON_STORE_BINARY_ONLY=1, which
    makes every Triton compile of the process cache kernels without their PTX). While a round waits for scores the
    caller sees its own environment, what it sets meanwhile survives the round's end, and the round sees its own."""
    import os

    monkeypatch.delenv("TRITON_STORE_BINARY_ONLY", raising=False)
    before = dict(os.environ)
    eng, inner, _ = engine(scale_rows())
    loop = Loop(eng)
    loop.run(3)  # the round is parked mid-search, in Helion's autotune
    assert inner.rounds and not inner.rounds[0].done
    assert dict(os.environ) == before
    assert inner.rounds[0]._env.get("TRITON_STORE_BINARY_ONLY") == "1"  # what Helion set, kept for its own turns
    monkeypatch.setenv("PARETOTUNE_TEST_SET_WHILE_PARKED", "1")
    loop.run(40)
    assert os.environ.get("PARETOTUNE_TEST_SET_WHILE_PARKED") == "1"
    inner.close()  # the stop unwinds Helion's patch on the round's own environment
    assert "TRITON_STORE_BINARY_ONLY" not in os.environ
    assert os.environ.get("PARETOTUNE_TEST_SET_WHILE_PARKED") == "1"
