"""Helion's own search algorithms as paretotune's config layer for Helion kernels, with the ACF one more dimension
of the same search: "joint" as one search.

The seam. A Helion search (``helion.autotuner.search_algorithms``: ``LFBOTreeSearch``, Helion's default, and the
others) measures only through ``self.benchmark_provider.benchmark(configs) -> list[BenchmarkResult]``; its
``_prepare`` builds that provider from the class in ``_benchmark_provider_cls`` (Helion's documented way to
swap benchmarking strategies: ``BenchmarkProvider``), and the kernel it tunes is any object with a
``config_spec``, ``settings`` and ``env``: Helion's adapter for foreign kernels
(``helion.autotuner.external._ExternalKernelAdapter``) takes any ConfigSpec. So the search runs unchanged on the
ConfigSpec paretotune derives (the kernel bound to meta tensors for the campaign's target: no GPU here), and its
provider hands each batch to paretotune's ask/tell. Two methods of the search are replaced: ``rebenchmark`` and
``final_rebenchmark_best`` time compiled functions on this process's GPU. paretotune times every candidate in its
GPU worker against the baseline on shared buffers and validates winners in a fresh process, so here they are
no-ops: the search ranks by paretotune's measurement.

The bridge. Each round of a Helion search runs in its own thread, in strict alternation with the caller (a
coroutine): ``ask`` lets it run until it calls ``benchmark`` (a batch: the proposals ``ask`` returns) or ends;
``tell`` records scores; once a batch is told in full, the next ``ask`` lets the search go on. Nothing runs
concurrently with paretotune's code, so Helion's global ``random`` state (seeded from the round's seed), the
target's device features and the process environment are swapped in and out at each hand-over, and nothing else
disturbs them. (Helion's ``autotune`` patches ``os.environ`` for its whole run, ``TRITON_STORE_BINARY_ONLY=1``
among it: left in place while a round waits for scores, every Triton compile of the process, and every worker it
starts, would cache kernels without their PTX, and the patch's exit would restore an environment older than the
caller's.) A point
measured before (the baseline, an earlier round's result) is answered inside the thread, never built again.

Islands and rounds. ``islands`` searches run side by side with their own seeds. The first leads: ``ask`` hands
out its whole batch. Helion ranks a generation at once, so while the last candidates of the leader's batch are
built and measured (and while its next batch is built) nothing of its own is left to start: then each ``ask``
hands out one proposal of the next island, and the loop, which asks until its window is full, keeps the GPU
busy through the barrier without the leader giving up its turn or its sample efficiency. When an island's
search ends (its generations or its patience spent), the island starts another round: a new seed, a refreshed
ACF list (:mod:`paretotune.search.acf_list`), the best configs so far as seed configs, and every result so far
as the surrogate's training data (LFBO's ``seed_training_data``). An island
whose last :data:`STALE_ROUNDS` rounds proposed nothing new is exhausted; when all are, ``ask`` returns ``[]``.

Multi-objective. Helion minimises one number: :func:`paretotune.search.scalarize.scalarize`, the geometric
mean of per-column ratios to the baseline's score. paretotune still records every objective and builds its
fronts from all of them.

Resume. The engine saves the results in the order told and, per round, what it started from (seed, ACF list,
seed configs, how many results it was trained on) and every batch with its scores. A restored engine replays
each unfinished round: the same search from the same seed, its ``benchmark`` calls answered from the log and
checked call by call; the batch in flight at the save stays in flight under the same ids. The replay is exact
because a round depends on nothing but what it started from and what it was told.
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import random
import threading
import time
import traceback
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from paretotune.errors import UserError
from paretotune.search.acf_list import AcfLists, label, sha
from paretotune.search.base import EngineOptions, Proposal
from paretotune.search.catalog import EngineInfo, register
from paretotune.search.scalarize import scalarize
from paretotune.search.space import NativeSpace, SearchSpace, point_key
from paretotune.store.atomic import atomic_write_json

Score = tuple[float, ...] | None
PENDING: Any = type("Pending", (), {"__repr__": lambda self: "PENDING"})()  # an item's score before it is told
# the engine's settings (campaign: search.helion): Helion's search_algorithms that need no network or config list,
# its effort profiles, and the defaults (ACFs per round, searches side by side)
ALGORITHMS = ("LFBOTreeSearch", "LFBOPatternSearch", "PatternSearch", "DifferentialEvolutionSearch",
              "DESurrogateHybrid", "RandomSearch")
EFFORTS = ("quick", "full")
DEFAULTS: dict[str, Any] = {"algorithm": "LFBOTreeSearch", "effort": "quick", "acfs": 8, "islands": 2}
STALE_ROUNDS = 3  # rounds in a row that propose nothing new before an island is exhausted
SEEDS_PER_ROUND = 3  # best results so far given to a new round as seed configs
STATE_VERSION = 2


class _Stop(BaseException):
    """Unwinds a search thread the engine no longer needs (not an ``Exception``: Helion must not catch it)."""


@dataclass
class _Item:
    """One config of a ``benchmark`` call: a point to evaluate, or one answered inside the thread."""

    key: str
    config: dict[str, Any]
    acf: bytes | None
    engine_id: str | None = None  # None: known before (never handed out)
    score: Any = PENDING  # Score once told
    issued: bool = False


@dataclass
class _Plan:
    """What a round starts from; with its calls' scores this determines everything the round does."""

    island: int
    index: int
    seed: int
    acfs: list[bytes | None]
    seeds: list[tuple[dict[str, Any], bytes | None]]
    train_upto: int  # results (in tell order) it is trained on before it starts


@dataclass(eq=False)
class _Round:
    """One run of a Helion search algorithm in a thread, stepped in strict alternation with the engine."""

    engine: HelionSearchEngine
    plan: _Plan
    replay: list[list[dict[str, Any]]] = field(default_factory=list)  # logged calls still to answer
    calls: list[list[_Item]] = field(default_factory=list)
    current: list[_Item] | None = None  # the call waiting for scores
    done: bool = False
    error: str | None = None
    posted: int = 0  # items handed out for evaluation

    def __post_init__(self) -> None:
        self.labels = [label(a) for a in self.plan.acfs]
        self.by_label = dict(zip(self.labels, self.plan.acfs, strict=True))
        self._cv = threading.Condition()
        self._turn = "main"
        self._stop = False
        self._thread: threading.Thread | None = None
        self._rng: Any = None
        self._outer_rng: Any = None
        self._env: dict[str, str] = {}
        self._outer_env: dict[str, str] = {}
        self._ctx: contextlib.ExitStack | None = None

    # -- the caller's side --
    def step(self) -> None:
        """Let the search run until its next batch waits for scores (``current``) or it ends (``done``)."""
        if self.done:
            return
        if self._thread is None:
            p = self.plan
            self._thread = threading.Thread(target=self._run, name=f"paretotune-helion-{p.island}.{p.index}",
                                            daemon=True)
            self._thread.start()
        with self._cv:
            self._turn = "helion"
            self._cv.notify_all()
            self._cv.wait_for(lambda: self._turn == "main")

    def stop(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            return
        with self._cv:
            self._stop, self._turn = True, "helion"
            self._cv.notify_all()
        self._thread.join(timeout=30)

    # -- the search thread's side --
    def _run(self) -> None:
        with self._cv:
            self._cv.wait_for(lambda: self._turn == "helion")
        try:
            if not self._stop:
                self._enter(first=True)
                self.engine._run_search(self)
        except _Stop:
            pass
        except Exception as exc:  # noqa: BLE001 - Helion's own errors end the round; the engine decides
            if type(exc).__name__ != "NoConfigFound":  # every config of a round failed: data, not an error
                self.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
        finally:
            if self._ctx is not None:
                self._leave()
            with self._cv:
                self.done, self._turn = True, "main"
                self._cv.notify_all()

    def _enter(self, first: bool = False) -> None:
        """The search's side of a hand-over: its random state, environment and the target's device features in
        place."""
        self._outer_rng = random.getstate()
        self._outer_env = dict(os.environ)
        if first:
            random.seed(self.plan.seed)
        else:
            random.setstate(self._rng)
            _set_environ(self._env)
        self._ctx = contextlib.ExitStack()
        self._ctx.enter_context(self.engine.native.context())

    def _leave(self) -> None:
        assert self._ctx is not None
        self._ctx.close()
        self._ctx = None
        self._rng = random.getstate()
        random.setstate(self._outer_rng)
        self._env = dict(os.environ)
        _set_environ(self._outer_env)

    def call(self, configs: Sequence[Any]) -> list[Score]:
        """A ``benchmark`` call of the search: its scores, from the log, from what is known, or told."""
        items = [self.engine._item(c, self) for c in configs]
        n = len(self.calls)
        self.calls.append(items)
        if self.replay:
            logged = self.replay.pop(0)
            if [e["k"] for e in logged] != [i.key for i in items]:
                raise RuntimeError(f"Helion's search did not replay: call {n} of island {self.plan.island} round "
                                   f"{self.plan.index} proposed other configs than the checkpoint holds")
            for item, entry in zip(items, logged, strict=True):
                item.engine_id, item.issued = entry["id"], bool(entry.get("issued", True))
                item.score = _decode(entry["s"])
        else:
            for j, item in enumerate(items):
                known = self.engine._known.get(item.key, PENDING)
                if known is not PENDING:
                    item.score = known
                else:
                    item.engine_id = f"{self.plan.island}.{self.plan.index}.{n}.{j}"
                    self.posted += 1
        if any(i.score is PENDING for i in items):
            self.current = items
            self._leave()
            with self._cv:
                self._turn = "main"
                self._cv.notify_all()
                self._cv.wait_for(lambda: self._turn == "helion")
            self._enter()  # before a stop too: Helion's exits (its environment patch among them) run on its own state
            if self._stop:
                raise _Stop
            self.current = None
        return [i.score for i in items]  # type: ignore[misc]


def _set_environ(values: Mapping[str, str]) -> None:
    """Make ``os.environ`` equal ``values``, touching only what differs."""
    for name in [n for n in os.environ if n not in values]:
        del os.environ[name]
    for name, value in values.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _encode(score: Any) -> Any:
    if score is PENDING:
        return "pending"
    return None if score is None else list(score)


def _decode(value: Any) -> Any:
    if value == "pending":
        return PENDING
    return None if value is None else tuple(float(v) for v in value)


@cache
def _helion_classes() -> tuple[Any, Any]:
    """The provider and the search subclass factory (Helion is imported only when a search runs)."""
    from helion.autotuner.benchmark_provider import BenchmarkProvider, BenchmarkResult

    def unset(*_args: object, **_kw: object) -> None:
        raise RuntimeError("paretotune measures candidates itself: there is no function to call here")

    class BridgeProvider(BenchmarkProvider):
        """Hands a search's batch to the round (and so to paretotune's ask/tell)."""

        mutated_arg_indices: Sequence[int] = ()

        def __init__(self, round_: _Round, **_context: object) -> None:
            self._round = round_

        def setup(self) -> None:
            """Nothing to set up: paretotune's evaluator owns the processes and the GPU."""

        def cleanup(self) -> None:
            """Nothing to release."""

        def benchmark(self, configs: list[Any], *, desc: str = "", raise_if_no_viable_config: bool = True
                      ) -> list[Any]:
            scores = self._round.call(configs)
            now, reference = time.perf_counter(), self._round.engine.reference
            return [BenchmarkResult(config=c, fn=unset, perf=scalarize(s, reference),
                                    status="ok" if s is not None else "error", compile_time=None, completed_at=now)
                    for c, s in zip(configs, scores, strict=True)]

    @cache
    def bridged(cls: type) -> type:
        """The search class, its own GPU re-timing left out (paretotune's measurement is the one it ranks by)."""

        def rebenchmark(self: Any, members: Any, **_kw: Any) -> None:
            return None

        def final_rebenchmark_best(self: Any, best: Any) -> Any:
            return best

        return type(f"Bridged{cls.__name__}", (cls,), {"rebenchmark": rebenchmark,
                                                       "final_rebenchmark_best": final_rebenchmark_best})

    return BridgeProvider, bridged


class HelionSearchEngine:
    """Helion's search over its ConfigSpec (plus the ACF list), behind paretotune's ask/tell."""

    asynchronous = True  # asked again while batches are in flight ([] until one is told in full); any tells

    def __init__(self, space: SearchSpace, native: NativeSpace, *, n_objectives: int, seed: int,
                 seed_config: Mapping[str, Any] | None = None, algorithm: str = DEFAULTS["algorithm"],
                 effort: str = DEFAULTS["effort"], acfs: int = DEFAULTS["acfs"],
                 islands: int = DEFAULTS["islands"]) -> None:
        if algorithm not in ALGORITHMS:
            raise UserError(f"search.helion.algorithm: unknown '{algorithm}' (known: {', '.join(ALGORITHMS)})")
        if effort not in EFFORTS:
            raise UserError(f"search.helion.effort: unknown '{effort}' (known: {', '.join(EFFORTS)})")
        if native.kind != "helion":
            raise UserError(f"search.engine: helion searches a Helion ConfigSpec, not a {native.kind} space")
        self.space, self.native = space, native
        self.n_objectives, self.seed = n_objectives, seed
        self.algorithm, self.effort, self.islands = algorithm, effort, max(1, int(islands))
        self._lists = AcfLists(space, max(1, int(acfs)))
        self._seed_config = dict(seed_config) if seed_config else None
        self.reference: list[float] | None = None  # the scalarisation's reference (baseline, else first success)
        self.results: list[dict[str, Any]] = []  # told, in order: key, config, ACF sha, score
        self._known: dict[str, Score] = {}
        self._acf_data: dict[str, bytes] = {}
        self.rounds: list[_Round] = []
        self._active: dict[int, _Round] = {}
        self._stale = [0] * self.islands
        self._pending: dict[str, _Item] = {}
        self.errors: list[str] = []
        self._baseline_key: str | None = None

    # -- what the campaign calls --
    def know_baseline(self, config: Mapping[str, Any], score: Sequence[float]) -> None:
        """The baseline's config and score: the scalarisation's reference, a seed config, never re-evaluated."""
        self.reference = [float(v) for v in score]
        self._seed_config = dict(config)
        self._baseline_key = point_key(dict(config), None)
        self._known[self._baseline_key] = tuple(self.reference)

    def ask(self) -> list[Proposal]:
        """The leading island's whole batch; while all of it is in flight, one proposal of the next island (the
        loop asks again until its window is full, so the others keep the GPU busy through the leader's
        generation barrier without taking its turn)."""
        out: list[Proposal] = []
        leading = True
        for island in range(self.islands):
            round_ = self._ready(island)
            if round_ is None or round_.current is None:
                continue  # exhausted: the next island leads
            for item in round_.current:
                if item.score is PENDING and item.engine_id is not None and not item.issued:
                    item.issued = True
                    self._pending[item.engine_id] = item
                    out.append(Proposal(engine_id=item.engine_id, config=dict(item.config), acf=item.acf))
                    if not leading:
                        break
            leading = False
            if out:
                break
        if not out and not self._pending and self.errors and all(s >= STALE_ROUNDS for s in self._stale):
            raise RuntimeError(f"Helion's {self.algorithm} cannot go on: {self.errors[-1]}")
        return out

    def tell(self, scores: dict[str, Score]) -> None:
        for engine_id, score in scores.items():
            item = self._pending.pop(engine_id, None)
            if item is None or item.score is not PENDING:
                continue
            item.score = None if score is None else tuple(float(v) for v in score)
            self._record(item.key, item.config, item.acf, item.score)

    def close(self) -> None:
        """End the search threads (they are daemons: a process may also just exit)."""
        for round_ in self._active.values():
            round_.stop()

    # -- rounds --
    def _ready(self, island: int) -> _Round | None:
        """The island's round with a batch waiting for scores, advanced (and restarted) as needed; None when
        the island is exhausted."""
        for _ in range(STALE_ROUNDS + 1):
            round_ = self._active.get(island)
            if round_ is None or round_.done:
                if self._stale[island] >= STALE_ROUNDS:
                    return None
                round_ = self._start_round(island)
            if round_.current is not None and any(i.score is PENDING for i in round_.current):
                return round_
            round_.step()
            if not round_.done:
                return round_
            self._end_round(round_)
        return None

    def _start_round(self, island: int) -> _Round:
        index = sum(1 for r in self.rounds if r.plan.island == island)
        acfs = self._lists.for_round(self._best_acfs())
        plan = _Plan(island=island, index=index, seed=_round_seed(self.seed, island, index), acfs=acfs,
                     seeds=self._round_seeds(acfs), train_upto=len(self.results))
        for data in acfs:
            if data is not None:
                self._acf_data[sha(data)] = data  # type: ignore[index]
        round_ = _Round(self, plan)
        self.rounds.append(round_)
        self._active[island] = round_
        return round_

    def _end_round(self, round_: _Round) -> None:
        island = round_.plan.island
        self._stale[island] = 0 if round_.posted else self._stale[island] + 1
        if round_.error:
            self.errors.append(round_.error)
            warnings.warn(f"Helion's {self.algorithm} (island {island}, round {round_.plan.index}) stopped: "
                          f"{round_.error.splitlines()[0]}", RuntimeWarning, stacklevel=3)

    def _record(self, key: str, config: dict[str, Any], acf: bytes | None, score: Score) -> None:
        self.results.append({"k": key, "c": config, "a": sha(acf), "s": None if score is None else list(score)})
        self._known[key] = score
        if acf is not None:
            self._acf_data[sha(acf)] = acf  # type: ignore[index]
        if self.reference is None and score is not None:
            self.reference = list(score)

    def _ranked(self) -> list[dict[str, Any]]:
        """Successful results, best first by the search's number (ties: the earlier told)."""
        ok = [(scalarize(r["s"], self.reference), i, r) for i, r in enumerate(self.results) if r["s"] is not None]
        return [r for v, _, r in sorted(ok, key=lambda t: (t[0], t[1])) if math.isfinite(v)]

    def _best_acfs(self) -> list[bytes]:
        return [self._acf_data[r["a"]] for r in self._ranked() if r["a"] is not None]

    def _round_seeds(self, acfs: list[bytes | None]) -> list[tuple[dict[str, Any], bytes | None]]:
        """The baseline (or the campaign's starting config) and the best results so far, as seed configs (an
        ACF not in this round's list is dropped: the config is seeded without it)."""
        seeds: list[tuple[dict[str, Any], bytes | None]] = []
        if self._seed_config:
            seeds.append((dict(self._seed_config), None))
        for r in self._ranked():
            data = self._acf_data.get(r["a"]) if r["a"] else None
            seed = (dict(r["c"]), data if data in acfs else None)
            if seed not in seeds:
                seeds.append(seed)
            if len(seeds) > SEEDS_PER_ROUND:
                break
        return seeds

    def _item(self, config: Any, round_: _Round) -> _Item:
        values = dict(config.config)
        name = values.pop("advanced_controls_file", "") or ""
        if name not in round_.by_label:
            raise RuntimeError(f"Helion proposed an ACF outside the round's list: {name!r}")
        acf = round_.by_label[name]
        return _Item(key=point_key(values, sha(acf)), config=values, acf=acf)

    def _run_search(self, round_: _Round) -> None:
        """Build the round's Helion search and run it (in the round's thread, holding the turn)."""
        import torch
        from helion.autotuner import search_algorithms
        from helion.autotuner.effort_profile import get_effort_profile
        from helion.autotuner.external import _ExternalKernelAdapter
        from helion.autotuner.pattern_search import InitialPopulationStrategy
        from helion.runtime.config import Config

        provider_cls, bridged = _helion_classes()
        plan = round_.plan
        searched = self._lists.searched

        def config_of(values: Mapping[str, Any], acf: bytes | None) -> Any:
            return Config(**{**values, "advanced_controls_file": label(acf)} if searched else dict(values))

        seeds = [config_of(c, a if a in plan.acfs else None) for c, a in plan.seeds]
        kernel = _ExternalKernelAdapter(
            self.native.spec, lambda _config: None, (), device=torch.device("cpu"),
            autotune_random_seed=plan.seed, autotune_search_acf=round_.labels if searched else [],
            autotune_seed_configs=seeds or None, autotune_progress_bar=False, autotune_log_level=logging.WARNING,
            autotune_effort=self.effort, autotune_config_overrides={}, autotune_max_generations=None,
            autotune_budget_seconds=None)
        cls = bridged(search_algorithms[self.algorithm])
        import inspect

        params = inspect.signature(cls.__init__).parameters
        kwargs = {k: v for k, v in cls.get_kwargs_from_profile(get_effort_profile(self.effort), kernel.settings).items()
                  if k in params}
        if "initial_population_strategy" in params:  # the seed configs first, then Helion's random draws
            kwargs["initial_population_strategy"] = InitialPopulationStrategy.FROM_BEST_AVAILABLE
        if "best_available_pad_random" in params:
            kwargs["best_available_pad_random"] = True
        search = cls(kernel, (), **kwargs)
        search._benchmark_provider_cls = lambda **context: provider_cls(round_, **context)
        seed_training = getattr(search, "seed_training_data", None)
        if seed_training is not None and plan.train_upto:
            from helion.autotuner.benchmark_provider import BenchmarkResult

            known = []
            for r in self.results[:plan.train_upto]:
                data = self._acf_data.get(r["a"]) if r["a"] else None
                if data not in plan.acfs:
                    continue  # an ACF this round cannot name: its configs are not in this round's space
                known.append(BenchmarkResult(config=config_of(r["c"], data), fn=lambda *a: None,
                                             perf=scalarize(r["s"], self.reference),
                                             status="ok" if r["s"] is not None else "error", compile_time=None))
            seed_training(known)
        search.autotune()

    # -- checkpoints --
    def save(self, path: str) -> bool:
        """One JSON file, compact (the loop spaces out saves that take 50 ms or more on GPU campaigns, and a
        resume after a skipped save restarts the engine): configs as value rows under a shared key layout,
        ACFs once each (base64), indices elsewhere."""
        codec = _Codec()
        rounds = []
        for r in self.rounds:
            p = r.plan
            calls = [] if r.done else [[[*codec.point(i.config, i.acf), i.engine_id, _encode(i.score), i.issued]
                                         for i in call] for call in r.calls]
            rounds.append({"island": p.island, "index": p.index, "seed": p.seed,
                           "acfs": [codec.acf(a) for a in p.acfs], "seeds": [codec.point(c, a) for c, a in p.seeds],
                           "train_upto": p.train_upto, "done": r.done, "posted": r.posted, "error": r.error,
                           "calls": calls})
        results = [[*codec.point(r["c"], self._acf_data.get(r["a"]) if r["a"] else None), r["s"]]
                   for r in self.results]
        state = {"version": STATE_VERSION, "algorithm": self.algorithm, "effort": self.effort,
                 "islands": self.islands, "seed": self.seed, "reference": self.reference,
                 "seed_config": self._seed_config, "baseline_key": self._baseline_key, "results": results,
                 "stale": self._stale, "errors": self.errors, "rounds": rounds, **codec.tables()}
        atomic_write_json(path, state, separators=(",", ":"))
        return True

    def restore(self, path: str) -> None:
        """Load :meth:`save`'s state into a fresh engine and replay each unfinished round to where it was."""
        state = json.loads(Path(path).read_text())
        if state.get("version") != STATE_VERSION:
            raise NotImplementedError(f"engine checkpoint version {state.get('version')}")
        for name in ("algorithm", "effort", "islands", "seed"):
            if state[name] != getattr(self, name):
                raise RuntimeError(f"the checkpoint was made with {name} {state[name]!r}, not {getattr(self, name)!r}")
        codec = _Codec.from_tables(state)
        self.reference, self._seed_config = state["reference"], state["seed_config"]
        self._baseline_key = state["baseline_key"]
        self._known = {} if self._baseline_key is None else {self._baseline_key: tuple(self.reference or ())}
        self._acf_data = {sha(a): a for a in codec.acfs if a is not None}  # type: ignore[misc]
        self.results = []
        for layout, values, acf, score in state["results"]:
            config, data = codec.config(layout, values), codec.acfs[acf]
            key = point_key(config, sha(data))
            self.results.append({"k": key, "c": config, "a": sha(data), "s": score})
            self._known[key] = None if score is None else tuple(score)
        self._stale, self.errors = list(state["stale"]), list(state["errors"])
        self.rounds, self._active, self._pending = [], {}, {}
        for entry in state["rounds"]:
            plan = _Plan(island=entry["island"], index=entry["index"], seed=entry["seed"],
                         acfs=[codec.acfs[a] for a in entry["acfs"]],
                         seeds=[(codec.config(lay, vals), codec.acfs[a]) for lay, vals, a in entry["seeds"]],
                         train_upto=entry["train_upto"])
            log = [[{"k": point_key(codec.config(lay, vals), sha(codec.acfs[a])), "id": eid, "s": score,
                     "issued": issued} for lay, vals, a, eid, score, issued in call] for call in entry["calls"]]
            round_ = _Round(self, plan, replay=log, done=entry["done"], posted=entry["posted"], error=entry["error"])
            self.rounds.append(round_)
            self._active[plan.island] = round_
        for round_ in self._active.values():
            if round_.done:
                continue
            round_.step()  # replays its logged calls; stops at the batch in flight (or a new one, or the end)
            if round_.replay or (round_.done and round_.error and "did not replay" in round_.error):
                # another Helion (or a bug): resume goes on with a fresh engine (no record is lost), and says so
                why = (round_.error or "").splitlines()[0] or "Helion's search ended before its log did"
                self.close()
                warnings.warn(f"the helion engine cannot replay its checkpoint ({why}); the search starts afresh",
                              RuntimeWarning, stacklevel=2)
                raise NotImplementedError(why)
            if round_.done:
                self._end_round(round_)
            elif round_.current is not None:
                for item in round_.current:
                    if item.score is PENDING and item.engine_id is not None and item.issued:
                        self._pending[item.engine_id] = item


class _Codec:
    """Compact checkpoint rows: a config is (layout index, values in that layout's key order), an ACF an index
    into one table of base64 strings (index 0: no ACF)."""

    def __init__(self) -> None:
        self.layouts: list[list[str]] = []
        self._layout_ids: dict[tuple[str, ...], int] = {}
        self.acfs: list[bytes | None] = [None]
        self._acf_ids: dict[bytes | None, int] = {None: 0}

    def acf(self, data: bytes | None) -> int:
        if data not in self._acf_ids:
            self._acf_ids[data] = len(self.acfs)
            self.acfs.append(data)
        return self._acf_ids[data]

    def point(self, config: Mapping[str, Any], acf: bytes | None) -> list[Any]:
        keys = tuple(config)
        if keys not in self._layout_ids:
            self._layout_ids[keys] = len(self.layouts)
            self.layouts.append(list(keys))
        return [self._layout_ids[keys], [config[k] for k in keys], self.acf(acf)]

    def config(self, layout: int, values: list[Any]) -> dict[str, Any]:
        return dict(zip(self.layouts[layout], values, strict=True))

    def tables(self) -> dict[str, Any]:
        import base64

        return {"layouts": self.layouts,
                "acf_table": [None if a is None else base64.b64encode(a).decode() for a in self.acfs]}

    @classmethod
    def from_tables(cls, state: Mapping[str, Any]) -> _Codec:
        import base64

        codec = cls()
        codec.layouts = [list(k) for k in state["layouts"]]
        codec.acfs = [None if a is None else base64.b64decode(a) for a in state["acf_table"]]
        return codec


def _round_seed(seed: int, island: int, index: int) -> int:
    """A distinct, reproducible seed per (campaign seed, island, round)."""
    return (seed * 1_000_003 + island * 10_007 + index) % 2**32


def create(space: SearchSpace, options: EngineOptions) -> HelionSearchEngine:
    """The registry's entry point; needs Helion's ConfigSpec (``options.native``) from the caller."""
    if options.native is None:
        raise UserError("search.engine: helion searches Helion's own ConfigSpec; it needs a Helion kernel without "
                        "a hand-written space (no kernel.space, no space in the kernel's spec)")
    settings = {**DEFAULTS, **dict(options.settings or {})}
    return HelionSearchEngine(space, options.native, n_objectives=options.n_objectives, seed=options.seed,
                              seed_config=options.seed_config, algorithm=settings["algorithm"],
                              effort=settings["effort"], acfs=settings["acfs"], islands=settings["islands"])


register(EngineInfo("helion", create,
                    "Helion's own search (LFBOTreeSearch) over its ConfigSpec, the ACF one more dimension",
                    native="helion", choices={"algorithm": ALGORITHMS, "effort": EFFORTS}, defaults=DEFAULTS))
