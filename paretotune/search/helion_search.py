"""Helion's own search algorithms as paretotune's config layer for Helion kernels, with the ACF one more dimension
of the same search: "joint" as one search.

Helion's search runs unchanged on the ConfigSpec paretotune derives, measuring through a benchmark provider that
hands each batch to paretotune's ask/tell (:mod:`paretotune.search.helion_bridge`); each run of it is a round in
its own thread, stepped in strict alternation with the engine (:mod:`paretotune.search.helion_round`).

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
seed configs, how many results it was trained on) and every batch with its scores
(:mod:`paretotune.search.helion_checkpoint`). A restored engine replays
each unfinished round: the same search from the same seed, its ``benchmark`` calls answered from the log and
checked call by call; the batch in flight at the save stays in flight under the same ids. The replay is exact
because a round depends on nothing but what it started from and what it was told.
"""
from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paretotune.compat import helion as compat_helion
from paretotune.errors import UserError
from paretotune.search.acf_list import AcfLists, sha
from paretotune.search.base import EngineOptions, Proposal
from paretotune.search.catalog import EngineInfo, register
from paretotune.search.helion_bridge import Known, run_round
from paretotune.search.helion_checkpoint import STATE_VERSION, Codec, decode_score, encode_score
from paretotune.search.helion_round import PENDING, Item, Plan, Round, Score, round_seed
from paretotune.search.scalarize import scalarize
from paretotune.search.space import NativeSpace, SearchSpace, point_key
from paretotune.search.toward_default import toward_default
from paretotune.store.atomic import atomic_write_json

# the engine's settings (campaign: search.helion): Helion's search_algorithms that need no network or config list,
# its effort profiles, and the defaults (ACFs per round, searches side by side)
ALGORITHMS = ("LFBOTreeSearch", "LFBOPatternSearch", "PatternSearch", "DifferentialEvolutionSearch",
              "DESurrogateHybrid", "RandomSearch")
EFFORTS = ("quick", "full")
DEFAULTS: dict[str, Any] = {"algorithm": "LFBOTreeSearch", "effort": "quick", "acfs": 8, "islands": 2}
STALE_ROUNDS = 3  # rounds in a row that propose nothing new before an island is exhausted
SEEDS_PER_ROUND = 3  # best results so far given to a new round as seed configs


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
        self._seed_config = self._conformed(seed_config) if seed_config else None
        self.reference: list[float] | None = None  # the scalarisation's reference (baseline, else first success)
        self.results: list[dict[str, Any]] = []  # told, in order: key, config, ACF sha, score
        self._known: dict[str, Score] = {}
        self._acf_data: dict[str, bytes] = {}
        self.rounds: list[Round] = []
        self._active: dict[int, Round] = {}
        self._stale = [0] * self.islands
        self._pending: dict[str, Item] = {}
        self.errors: list[str] = []
        self._baseline_key: str | None = None

    # -- what the campaign calls --
    def know_baseline(self, config: Mapping[str, Any], score: Sequence[float]) -> None:
        """The baseline's config and score: the scalarisation's reference, a seed config, never re-evaluated."""
        self.reference = [float(v) for v in score]
        self._seed_config = self._conformed(config)
        self._baseline_key = point_key(dict(config), None)
        for key in {self._baseline_key, point_key(self._seed_config, None)}:  # as given, and as Helion's seed
            self._known[key] = tuple(self.reference)

    def _conformed(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """A seed config in the lengths Helion's search encodes: a baseline with one more indexing slot than this
        binding has ended every round after its first population (an assertion in LFBO's encoding)."""
        return compat_helion.conform_list_lengths(self.native.spec, config)

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
        if not out and not self._pending and all(s >= STALE_ROUNDS for s in self._stale):
            failed = [r.error for r in self.rounds if r.error]  # rounds Helion's search ended on an exception
            if failed:
                raise RuntimeError(f"Helion's {self.algorithm} cannot go on: {failed[-1]}")
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
    def _ready(self, island: int) -> Round | None:
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

    def _start_round(self, island: int) -> Round:
        index = sum(1 for r in self.rounds if r.plan.island == island)
        acfs = self._lists.for_round(self._best_acfs())
        plan = Plan(island=island, index=index, seed=round_seed(self.seed, island, index), acfs=acfs,
                    seeds=self._round_seeds(acfs, first=not self.rounds), train_upto=len(self.results))
        for data in acfs:
            if data is not None:
                self._acf_data[sha(data)] = data  # type: ignore[index]
        round_ = Round(self, plan)
        self.rounds.append(round_)
        self._active[island] = round_
        return round_

    def _end_round(self, round_: Round) -> None:
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

    def _round_seeds(self, acfs: list[bytes | None], first: bool = False) -> list[tuple[dict[str, Any], bytes | None]]:
        """The baseline (or the campaign's starting config) and the best results so far, as seed configs (an
        ACF not in this round's list is dropped: the config is seeded without it). The ``first`` round of the
        search also starts from the configs between the baseline and Helion's default (:mod:`.toward_default`)."""
        seeds: list[tuple[dict[str, Any], bytes | None]] = []
        if self._seed_config:
            seeds.append((dict(self._seed_config), None))
            if first:
                seeds += [(config, None) for config in self._toward_default(self._seed_config)]
        for r in self._ranked():
            data = self._acf_data.get(r["a"]) if r["a"] else None
            seed = (dict(r["c"]), data if data in acfs else None)
            if seed not in seeds:
                seeds.append(seed)
            if len(seeds) > SEEDS_PER_ROUND:
                break
        return seeds

    def _toward_default(self, tuned: dict[str, Any]) -> list[dict[str, Any]]:
        """The configs between the baseline and Helion's default (:mod:`.toward_default`); none, and the reason
        among the engine's errors, where this ConfigSpec gives no default: the search then starts from the
        baseline alone."""
        try:
            default = compat_helion.default_config(self.native.spec)
        except Exception as exc:  # noqa: BLE001 - Helion's code; a seed less is no reason to stop the search
            self.errors.append(f"{type(exc).__name__} in Helion's ConfigSpec.default_config: {exc}")
            return []
        return toward_default(tuned, default)

    # -- what a round calls (helion_round.RoundOwner) --
    def item(self, config: Any, round_: Round) -> Item:
        values = dict(config.config)
        name = values.pop("advanced_controls_file", "") or ""
        if name not in round_.by_label:
            raise RuntimeError(f"Helion proposed an ACF outside the round's list: {name!r}")
        acf = round_.by_label[name]
        return Item(key=point_key(values, sha(acf)), config=values, acf=acf)

    def known(self, key: str) -> Any:
        return self._known.get(key, PENDING)

    def run_search(self, round_: Round) -> None:
        """Build the round's Helion search and run it (in the round's thread, holding the turn)."""
        plan = round_.plan
        known = []
        for r in self.results[:plan.train_upto]:
            data = self._acf_data.get(r["a"]) if r["a"] else None
            if data not in plan.acfs:
                continue  # an ACF this round cannot name: its configs are not in this round's space
            known.append(Known(config=r["c"], acf=data, score=r["s"]))
        run_round(round_, self.native.spec, algorithm=self.algorithm, effort=self.effort,
                  searched=self._lists.searched, known=known, reference=self.reference)

    # -- checkpoints --
    def save(self, path: str) -> bool:
        """One JSON file, compact (the loop spaces out saves that take 50 ms or more on GPU campaigns, and a
        resume after a skipped save restarts the engine): configs as value rows under a shared key layout,
        ACFs once each (base64), indices elsewhere."""
        codec = Codec()
        rounds = []
        for r in self.rounds:
            p = r.plan
            calls = [] if r.done else [[[*codec.point(i.config, i.acf), i.engine_id, encode_score(i.score), i.issued]
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
        codec = Codec.from_tables(state)
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
            plan = Plan(island=entry["island"], index=entry["index"], seed=entry["seed"],
                        acfs=[codec.acfs[a] for a in entry["acfs"]],
                        seeds=[(codec.config(lay, vals), codec.acfs[a]) for lay, vals, a in entry["seeds"]],
                        train_upto=entry["train_upto"])
            log = [[{"k": point_key(codec.config(lay, vals), sha(codec.acfs[a])), "id": eid,
                     "s": decode_score(score), "issued": issued}
                    for lay, vals, a, eid, score, issued in call] for call in entry["calls"]]
            round_ = Round(self, plan, replay=log, done=entry["done"], posted=entry["posted"], error=entry["error"])
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
