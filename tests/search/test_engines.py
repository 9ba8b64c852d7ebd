"""Engines on synthetic objectives (no compiles): every engine behind one interface, de-duplication,
exhaustion of finite spaces, NSGA-II's encoding and failure handling, and the sequential composition."""
from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from paretotune.search.base import Proposal, SearchEngine
from paretotune.search.dedupe import Deduplicated
from paretotune.search.nsga2_engine import PENALTY, NSGA2Engine
from paretotune.search import ENGINES
from paretotune.search.catalog import pool_size_problem, search_problem
from paretotune.search.registry import build_engine
from paretotune.search.sequential import SequentialEngine, knee_config
from paretotune.search.space import SearchSpace
from paretotune.toolchain.acf_sources import AcfOption, finite_list

ACFS = finite_list([AcfOption(name=f"a{i}", data=f"acf-{i}".encode()) for i in range(3)])
SPACE = SearchSpace(knobs={"num_warps": [4, 8, 16, 32], "num_stages": [1]}, acf="finite", acf_options=ACFS)
Score = tuple[float, ...] | None


def _acf_index(acf: bytes | None) -> int:
    return 0 if acf is None else 1 + int(acf.decode().split("-")[1])


def toy(config: dict[str, Any], acf: bytes | None) -> Score:
    """Two objectives that trade off; 4 warps with the last ACF fails (as a rejected ACF would)."""
    w, k = config["num_warps"], _acf_index(acf)
    if w == 4 and k == 3:
        return None
    return (w / 32 + 0.1 * k, 32 / w + 0.2 * (3 - k))


def drive(engine: SearchEngine, budget: int, score: Callable[[dict[str, Any], bytes | None], Score] = toy,
          ) -> list[Proposal]:
    """The campaign loop in miniature: ask, truncate to the budget, score, tell, until [] or the budget."""
    handed: list[Proposal] = []
    while len(handed) < budget:
        batch = engine.ask()[: budget - len(handed)]
        if not batch:
            break
        handed += batch
        engine.tell({p.engine_id: score(p.config, p.acf) for p in batch})
    return handed


def _keys(proposals: list[Proposal]) -> list[str]:
    return [json.dumps([p.config, p.acf.decode() if p.acf else None], sort_keys=True) for p in proposals]


@pytest.mark.parametrize("name", ENGINES)
def test_each_engine_covers_a_small_finite_space_once_then_stops(name: str) -> None:
    engine = Deduplicated(build_engine(name, SPACE, n_objectives=2, pool_size=8, generations=3, seed=1))
    handed = drive(engine, budget=100)
    assert len(handed) == len(set(_keys(handed))) == SPACE.size == 16
    assert engine.ask() == []
    for p in handed:
        assert p.config["num_stages"] == 1 and p.config["num_warps"] in (4, 8, 16, 32)
        assert p.acf is None or p.acf in {o.data for o in ACFS}


@pytest.mark.parametrize("name", ["nsga2", "random"])
def test_seeded_engines_are_reproducible(name: str) -> None:
    runs = [_keys(drive(Deduplicated(build_engine(name, SPACE, n_objectives=2, pool_size=8, generations=2,
                                                  seed=7)), budget=12)) for _ in range(2)]
    assert runs[0] == runs[1]


def test_grid_order_varies_the_acf_fastest_with_no_acf_first() -> None:
    handed = drive(build_engine("grid", SPACE, n_objectives=2, pool_size=6, generations=1, seed=0), budget=6)
    assert [(p.config["num_warps"], _acf_index(p.acf)) for p in handed] == [
        (4, 0), (4, 1), (4, 2), (4, 3), (8, 0), (8, 1)]


def test_nsga2_encodes_numbers_as_ordered_integers_and_others_as_choices() -> None:
    from pymoo.core.variable import Choice, Integer

    space = SearchSpace(knobs={"BLOCK": [256, 64, 128], "order": ["row", "col"], "num_stages": [1]})
    engine = NSGA2Engine(space, num_objectives=1, pool_size=6, seed=0)
    variables = engine._problem.vars
    assert isinstance(variables["BLOCK"], Integer) and engine._decoders["BLOCK"] == [64, 128, 256]
    assert isinstance(variables["order"], Choice) and "num_stages" not in variables
    handed = drive(Deduplicated(engine), budget=50, score=lambda c, _a: (float(c["BLOCK"]),))
    assert {(p.config["BLOCK"], p.config["order"]) for p in handed} == {
        (b, o) for b in (64, 128, 256) for o in ("row", "col")}
    assert all(p.config["num_stages"] == 1 and p.acf is None for p in handed)


def test_nsga2_ranks_failures_below_every_success() -> None:
    engine = NSGA2Engine(SPACE, num_objectives=2, pool_size=8, seed=2)
    first = engine.ask()
    scores = {p.engine_id: toy(p.config, p.acf) for p in first}
    scores[first[0].engine_id] = None
    del scores[first[1].engine_id]  # cut by the budget: scored as a failure
    engine.tell(scores)
    pop = engine._algorithm.pop
    feasible = pop.get("CV")[:, 0] <= 0
    assert feasible.sum() == len(first) - 2
    assert (pop.get("F")[~feasible] == PENALTY).all()
    opt = engine._algorithm.opt
    assert len(opt) > 0 and (opt.get("CV")[:, 0] <= 0).all()


def test_nsga2_checkpoint_pickles(tmp_path: Path) -> None:
    engine = NSGA2Engine(SPACE, num_objectives=2, pool_size=8, seed=0)
    drive(engine, budget=8)
    assert engine.save(str(tmp_path / "ckpt"))
    state = pickle.loads((tmp_path / "ckpt").read_bytes())
    assert state["count"] == engine._count >= 8 and len(state["algorithm"].pop) > 0


class Repeating:
    """An inner engine that proposes the same two points (plus one new point) every time."""

    def __init__(self) -> None:
        self.told: list[dict[str, Score]] = []
        self.n = 0

    def ask(self) -> list[Proposal]:
        self.n += 1
        same = [Proposal(engine_id=f"{self.n}a", config={"x": 1}, acf=None),
                Proposal(engine_id=f"{self.n}b", config={"x": 1}, acf=None),  # twin within the batch
                Proposal(engine_id=f"{self.n}c", config={"x": 2}, acf=b"z")]
        return same + [Proposal(engine_id=f"{self.n}d", config={"x": 10 + self.n}, acf=None)]

    def tell(self, scores: dict[str, Score]) -> None:
        self.told.append(scores)

    def save(self, path: str) -> bool:
        return False


def test_deduplicated_hands_out_new_points_and_tells_the_inner_engine_everything() -> None:
    inner = Repeating()
    engine = Deduplicated(inner)
    first = engine.ask()
    assert [p.engine_id for p in first] == ["1a", "1c", "1d"]
    engine.tell({"1a": (1.0,), "1c": None, "1d": (3.0,)})
    assert inner.told[-1] == {"1a": (1.0,), "1b": (1.0,), "1c": None, "1d": (3.0,)}
    second = engine.ask()
    assert [p.engine_id for p in second] == ["2d"]  # 2a, 2b, 2c are answered from the cache
    engine.tell({"2d": (5.0,)})
    assert inner.told[-1] == {"2a": (1.0,), "2b": (1.0,), "2c": None, "2d": (5.0,)}


def test_deduplicated_gives_up_when_nothing_new_comes() -> None:
    class Stuck(Repeating):
        def ask(self) -> list[Proposal]:
            return super().ask()[:3]

    inner = Stuck()
    engine = Deduplicated(inner, max_attempts=5)
    engine.tell({p.engine_id: (0.0,) for p in engine.ask()})
    assert engine.ask() == [] and inner.n == 6


def test_knee_config_picks_the_balanced_point_of_the_front() -> None:
    results = [({"w": 4}, (10.0, 0.0)), ({"w": 8}, (2.0, 2.0)), ({"w": 16}, (0.0, 10.0)),
               ({"w": 32}, (3.0, 3.0))]  # w=32 is dominated by w=8
    assert knee_config(results) == {"w": 8}
    assert knee_config([({"w": 4}, (1.0,)), ({"w": 8}, (1.0,))]) == {"w": 4}  # ties: earliest


def test_sequential_tunes_configs_then_acfs_at_the_knee() -> None:
    cache: dict[str, Score] = {}
    phase1 = Deduplicated(build_engine("grid", SPACE.configs_only(), n_objectives=2, pool_size=2, generations=1,
                                       seed=0), cache=cache)
    winners: list[dict[str, Any]] = []

    def phase2(config: dict[str, Any]) -> SearchEngine:
        winners.append(config)
        return Deduplicated(build_engine("grid", SPACE.at_config(config), n_objectives=2, pool_size=2,
                                         generations=1, seed=0), cache=cache)

    def score(config: dict[str, Any], acf: bytes | None) -> Score:  # 8 warps is the knee of phase 1
        return {4: (9.0, 1.0), 8: (2.0, 2.0), 16: (1.0, 9.0), 32: (5.0, 5.0)}[config["num_warps"]]

    engine = SequentialEngine(phase1, phase2, phase1_budget=3)
    handed = drive(engine, budget=20, score=score)
    assert [p.config["num_warps"] for p in handed[:3]] == [4, 8, 16] and all(p.acf is None for p in handed[:3])
    assert winners == [{"num_warps": 8, "num_stages": 1}] and engine.phase == 2
    # phase 2: the 3 ACFs at 8 warps; its no-ACF point was answered from phase 1's cache
    assert [(p.config["num_warps"], _acf_index(p.acf)) for p in handed[3:]] == [(8, 1), (8, 2), (8, 3)]


def test_search_problem_names_the_impossible_combinations() -> None:
    assert search_problem("compileiq", "joint", "generated") is None
    assert search_problem("nsga2", "sequential", "finite") is None
    assert "cannot search generated ACFs" in (search_problem("nsga2", "joint", "generated") or "")
    assert "cannot search generated ACFs" in (search_problem("grid", "sequential", "generated") or "")
    assert "needs acf.search_space" in (search_problem("random", "sequential", "none") or "")
    assert "unknown engine 'tpe'" in (search_problem("tpe", "joint", "none") or "")


def test_minimum_pool_size_is_the_registry_s_rule() -> None:
    """One rule per engine, checked once at load time (CompileIQ keeps >= 1 + 2n survivors after culling >= 2)."""
    assert pool_size_problem("compileiq", 9, 3) is None
    assert pool_size_problem("compileiq", 8, 3) == ("8 is too small for 3 objective column(s) with the compileiq "
                                                    "engine (need at least 9)")
    assert all(pool_size_problem(name, 6, 8) is None for name in ("nsga2", "random", "grid"))


def test_space_size_and_phases() -> None:
    assert SPACE.size == 16 and SPACE.configs_only().size == 4
    at = SPACE.at_config({"num_warps": 8, "num_stages": 1})
    assert at.size == 4 and at.free == {} and at.config({}) == {"num_warps": 8, "num_stages": 1}
    assert SearchSpace(knobs={"a": [1, 2]}, acf="generated").size is None
    assert not SearchSpace(knobs={"a": [1]}).searchable


def test_campaign_file_rejects_an_engine_that_cannot_search_its_acfs(tmp_path: Path) -> None:
    from paretotune.campaign.load import load_campaign
    from paretotune.errors import UserError
    from tests.search.conftest import campaign_yaml

    path = tmp_path / "c.yaml"
    path.write_text(campaign_yaml(acf="{search_space: ptxas-13.3}", engine="nsga2"))
    with pytest.raises(UserError, match=r"c\.yaml: search: engine nsga2 cannot search generated ACFs"):
        load_campaign(path)


@pytest.mark.parametrize("name", ENGINES)
def test_checkpoint_restore_continues_without_repeats(name: str, tmp_path: Path) -> None:
    """Save between generations, restore into a fresh engine (as resume does), and finish the space."""
    def make() -> Deduplicated:
        return Deduplicated(build_engine(name, SPACE, n_objectives=2, pool_size=8, generations=3, seed=1))

    first = make()
    handed = drive(first, budget=8)
    assert first.save(str(tmp_path / "ckpt"))
    second = make()
    second.restore(str(tmp_path / "ckpt"))
    keys = _keys(handed + drive(second, budget=100))
    assert len(keys) == len(set(keys)) == SPACE.size


def sequential_over_space(phase1_engine: str = "grid", pool_size: int = 2, phase1_budget: int = 4,
                          knobs: tuple[str, ...] = ()) -> SequentialEngine:
    """``phase1_engine`` over SPACE's configs, then a grid over the ACFs at the knee, sharing one cache
    (``knobs``: as the registry gives them)."""
    cache: dict[str, Score] = {}
    phase1 = Deduplicated(build_engine(phase1_engine, SPACE.configs_only(), n_objectives=2, pool_size=pool_size,
                                       generations=1, seed=0), cache=cache)
    return SequentialEngine(phase1, lambda c: Deduplicated(build_engine(
        "grid", SPACE.at_config(c), n_objectives=2, pool_size=2, generations=1, seed=0), cache=cache),
        phase1_budget=phase1_budget, knobs=knobs)


@pytest.mark.parametrize("stop_after", [2, 5])  # in phase 1, in phase 2
def test_sequential_checkpoint_restore(stop_after: int, tmp_path: Path) -> None:
    first = sequential_over_space()
    handed = drive(first, budget=stop_after)
    assert first.save(str(tmp_path / "ckpt"))
    second = sequential_over_space()
    second.restore(str(tmp_path / "ckpt"))
    rest = drive(second, budget=100)
    keys = _keys(handed + rest)
    assert len(keys) == len(set(keys)) == 4 + 3  # 4 configs, then the 3 ACFs at the knee
    assert second.phase == 2 and all(p.acf is not None for p in rest[-3:])


def test_sequential_under_a_wall_clock_moves_to_acfs_at_half_the_time_left(tmp_path: Path) -> None:
    """With a wall-clock budget phase 1 ends at the middle of the time left when the search began, though its
    evaluation budget is far from spent; a restored engine keeps that point."""
    now = [20.0]  # the run's wall seconds: 20 s of start-up before the search
    engine = sequential_over_space("random", pool_size=1, phase1_budget=1000)
    engine.pace(lambda: now[0], 100.0)
    assert engine.phase1_until_s == 60.0  # 20 + (100 - 20) / 2
    first = drive(engine, budget=1)
    assert engine.phase == 1 and all(p.acf is None for p in first)
    assert engine.save(str(tmp_path / "ckpt"))
    restored = sequential_over_space("random", pool_size=1, phase1_budget=1000)
    restored.restore(str(tmp_path / "ckpt"))
    now[0] = 90.0  # a resumed process: pacing again does not move the point
    restored.pace(lambda: now[0], 100.0)
    assert restored.phase1_until_s == 60.0
    rest = drive(restored, budget=3)
    assert restored.phase == 2 and rest and all(p.acf is not None for p in rest)


def by_warps(scores: dict[int, tuple[float, ...]]) -> Callable[[dict[str, Any], bytes | None], Score]:
    return lambda config, acf: scores[config["num_warps"]]


def test_sequential_over_an_asynchronous_engine_waits_for_its_config_phase_at_its_budget() -> None:
    """Asked while its proposals are in flight (the loop's steady schedule), phase 1 hands out its budget, then
    answers [] until every config is told, and phase 2 starts at the knee of all of them, the last included."""
    engine = sequential_over_space("random", pool_size=2, phase1_budget=4)
    assert engine.asynchronous
    out: list[Proposal] = []
    for _ in range(20):  # asked again and again, nothing told (random repeats are held back, not handed)
        out += engine.ask()
    assert sorted(p.config["num_warps"] for p in out) == [4, 8, 16, 32] and engine.phase == 1
    score = by_warps({4: (9.0, 9.0), 8: (5.0, 5.0), 16: (3.0, 3.0), 32: (1.0, 1.0)})  # 32 warps: the best
    late = next(p for p in out if p.config["num_warps"] == 32)
    engine.tell({p.engine_id: score(p.config, p.acf) for p in out if p is not late})
    assert engine.ask() == [] and engine.phase == 1  # one config still in flight
    engine.tell({late.engine_id: score(late.config, late.acf)})
    rest = engine.ask()
    assert engine.phase == 2 and engine.winner == {"num_warps": 32, "num_stages": 1}
    assert rest and all(p.acf is not None and p.config == engine.winner for p in rest)


def test_sequential_at_its_wall_clock_moves_on_without_waiting() -> None:
    """Time up: phase 2 starts at the knee of what has come back; a config that comes back later is kept for
    the record but moves nothing (on the H200 a slow Helion compile held a generation for 30 s)."""
    now = [0.0]
    engine = sequential_over_space("random", pool_size=2, phase1_budget=100)
    engine.pace(lambda: now[0], 60.0)
    first = engine.ask()
    engine.tell({first[0].engine_id: (5.0, 5.0)})
    now[0] = 31.0  # past the middle of the 60 s
    rest = engine.ask()
    assert engine.phase == 2 and engine.winner == first[0].config
    assert rest and all(p.config == first[0].config for p in rest)
    engine.tell({first[1].engine_id: (0.0, 0.0)})  # better, but late
    assert engine.winner == first[0].config and ((first[1].config, (0.0, 0.0)) in engine._results)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_sequential_searches_acfs_at_the_baseline_unless_a_config_beats_it(asynchronous: bool) -> None:
    """The baseline's score is phase 1's first result: when every config tried is slower (a pretuned kernel),
    phase 2 searches ACFs at the baseline config; a baseline config without every knob is not a point."""
    engine = sequential_over_space("random" if asynchronous else "grid", pool_size=4, phase1_budget=3,
                                   knobs=tuple(SPACE.knobs))
    engine.know_baseline({"num_warps": 8}, (0.0, 0.0))  # no num_stages: ignored
    engine.know_baseline({"num_warps": 8, "num_stages": 1}, (1.0, 1.0))
    handed = drive(engine, budget=3, score=by_warps({4: (2.0, 2.0), 8: (2.0, 2.0), 16: (3.0, 1.5),
                                                     32: (4.0, 4.0)}))
    assert all(p.acf is None for p in handed)
    rest = engine.ask()
    assert engine.winner == {"num_warps": 8, "num_stages": 1}
    assert rest and all(p.config == engine.winner and p.acf is not None for p in rest)
