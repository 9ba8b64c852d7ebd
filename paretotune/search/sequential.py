"""The sequential strategy: tune kernel configs first without ACFs, then search ACFs on the winning config.

This is how tuning is usually done by hand, and the baseline the joint search must beat at an equal
evaluation budget. Two engines in turn behind one interface, so the campaign loop does not know about
phases:

1. Phase 1 searches the config-only space (no ACF) for up to ``phase1_budget`` evaluations (the registry
   gives half the campaign budget), or, under a wall-clock budget (:meth:`SequentialEngine.pace`), until half
   the time left when the search began has passed: whichever comes first, so that a time-bound campaign
   searches ACFs too. It ends early when its engine has nothing new to propose (a small config space is
   exhausted), and the rest of the budget goes to phase 2.
2. The winner is the **knee** of phase 1's non-dominated set (``paretotune.pareto.knee_pick``: the point
   with the smallest sum of objectives rescaled to [0, 1] over the front; ties to the earliest evaluated).
   If nothing in phase 1 succeeded, the first config phase 1 proposed is used.
3. Phase 2 searches ACFs only, at the winner's config, with an engine from ``phase2(config)``.

The baseline (the user's config, default compiler) is measured before any search; the loop gives its score to
:meth:`SequentialEngine.know_baseline`, so phase 1 must beat it to move the ACF search off the user's config. On
kernels whose config is already tuned (Helion's pretuned sm90 heuristics) every config phase 1 tried in a
minute was slower than the baseline, and without it phase 2 searched ACFs on a slower config.

With asynchronous engines the loop keeps candidates in flight across the switch (no generation barrier: with one,
a campaign whose Helion compiles take tens of seconds leaves the GPU idle while they run). Phase 1's end
by budget or by an exhausted space waits for its candidates still in flight (``ask`` returns ``[]`` while
they are, and the loop asks again as each comes back), so the winner is chosen from every result; its end by
the wall clock does not wait, and a phase-1 result that comes after the switch is kept but changes nothing.

Give both engines one de-duplication cache, so that phase 2's "no ACF" option at the winner is answered
from phase 1 instead of being evaluated again.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from paretotune.search.base import Proposal, SearchEngine, is_asynchronous
from paretotune.store.atomic import atomic_write_json

Score = tuple[float, ...] | None


def knee_config(results: list[tuple[dict[str, Any], tuple[float, ...]]]) -> dict[str, Any]:
    """The knee of the non-dominated set of (config, minimization tuple) pairs, in evaluation order."""
    from paretotune.pareto.choose import knee_pick
    from paretotune.pareto.dominance import pareto_ranks

    points = np.array([score for _, score in results], dtype=float)
    front = np.flatnonzero(pareto_ranks(points) == 0)
    columns = [f"o{j}" for j in range(points.shape[1])]
    frame = pd.DataFrame(points[front], columns=columns)
    frame.insert(0, "candidate_id", front)
    frame["status"] = "ok"
    pick = knee_pick(frame, dict.fromkeys(columns, "min"))
    return dict(results[int(pick["candidate_id"])][0])


class SequentialEngine:
    def __init__(self, phase1: SearchEngine, phase2: Callable[[dict[str, Any]], SearchEngine], *,
                 phase1_budget: int, knobs: Collection[str] = ()) -> None:
        """``knobs``: the space's kernel knobs; a baseline config without one of them is not a point phase 2
        can search at, and :meth:`know_baseline` ignores it."""
        if phase1_budget < 1:
            raise ValueError(f"phase1_budget must be >= 1, got {phase1_budget}")
        self._phase1, self._make_phase2 = phase1, phase2
        self._knobs = tuple(knobs)
        self.phase1_budget = phase1_budget
        self.phase = 1
        self.winner: dict[str, Any] | None = None
        self._engine: SearchEngine = phase1
        self._handed = 0  # phase-1 proposals handed out
        self._configs: dict[str, dict[str, Any]] = {}  # phase-1 engine_id -> config
        self._first_config: dict[str, Any] | None = None
        self._results: list[tuple[dict[str, Any], tuple[float, ...]]] = []
        self._clock: Callable[[], float] | None = None  # the run's wall seconds so far (see pace)
        self.phase1_until_s: float | None = None  # on that clock
        self._outstanding: set[str] = set()  # phase-1 proposals handed out in this process and not told yet

    @property
    def asynchronous(self) -> bool:
        """As the phase-1 engine (phase 2's is built by the same engine): then the loop may ask while
        proposals of either phase are in flight, and tell any subset (see the module docstring)."""
        return is_asynchronous(self._phase1)

    def know_baseline(self, config: dict[str, Any], score: tuple[float, ...]) -> None:
        """The baseline's config and score, measured before the search: a phase-1 result that comes first, so
        that it wins ties and phase 2 stays at the user's config unless phase 1 found a better one."""
        if self.phase == 1 and all(k in config for k in self._knobs):
            self._results.insert(0, (dict(config), tuple(score)))
            inner = getattr(self._phase1, "know_baseline", None)  # e.g. its de-duplication cache
            if inner is not None:
                inner(config, score)

    def pace(self, clock: Callable[[], float], wall_clock_s: float) -> None:
        """Bound phase 1 by time as well: it ends once ``clock()`` (the run's wall seconds) passes the middle of
        what was left of ``wall_clock_s`` when the search began. Called by the loop for a campaign with a
        wall-clock budget; a restored engine keeps the point it had."""
        self._clock = clock
        if self.phase == 1 and self.phase1_until_s is None:
            began = clock()
            self.phase1_until_s = began + max(0.0, wall_clock_s - began) / 2

    def _time_up(self) -> bool:
        return self._clock is not None and self.phase1_until_s is not None and self._clock() >= self.phase1_until_s

    def _phase1_open(self) -> bool:
        return self._handed < self.phase1_budget and not self._time_up()

    def _start_phase2(self) -> None:
        self.winner = knee_config(self._results) if self._results else dict(self._first_config or {})
        self.phase, self._engine = 2, self._make_phase2(self.winner)

    def ask(self) -> list[Proposal]:
        """Phase 1's proposals while it is open, then phase 2's; ``[]`` while phase 1 is over but waits for its
        candidates in flight (only an asynchronous loop, which asks again as they come back, sees that)."""
        if self.phase == 1:
            proposals = self._phase1.ask() if self._phase1_open() else []
            proposals = proposals[: self.phase1_budget - self._handed]
            if proposals:
                self._handed += len(proposals)
                self._configs.update({p.engine_id: p.config for p in proposals})
                self._outstanding.update(p.engine_id for p in proposals)
                if self._first_config is None:
                    self._first_config = proposals[0].config
                return [Proposal(engine_id=f"s1:{p.engine_id}", config=p.config, acf=p.acf) for p in proposals]
            if self._outstanding and not self._time_up():
                return []
            self._start_phase2()
        return [Proposal(engine_id=f"s2:{p.engine_id}", config=p.config, acf=p.acf) for p in self._engine.ask()]

    def tell(self, scores: dict[str, Score]) -> None:
        """Scores by phase: phase 1's are results (also after the switch, kept for the record), phase 2's go
        to phase 2's engine."""
        first = {k.removeprefix("s1:"): v for k, v in scores.items() if k.startswith("s1:")}
        second = {k.removeprefix("s2:"): v for k, v in scores.items() if k.startswith("s2:")}
        self._outstanding.difference_update(first)
        self._results += [(self._configs[k], v) for k, v in first.items() if v is not None and k in self._configs]
        if first and self.phase == 1:
            self._phase1.tell(first)
        if second and self.phase == 2:
            self._engine.tell(second)

    def save(self, path: str) -> bool:
        """The active phase's engine at ``path`` plus ``<path>.phase.json`` (phase, winner, phase-1 results)."""
        if not self._engine.save(path):
            return False
        state = {"phase": self.phase, "winner": self.winner, "handed": self._handed, "configs": self._configs,
                 "first_config": self._first_config, "results": [[c, list(s)] for c, s in self._results],
                 "phase1_until_s": self.phase1_until_s}
        atomic_write_json(f"{path}.phase.json", state)
        return True

    def restore(self, path: str) -> None:
        """Inverse of :meth:`save` on a freshly built engine: rebuild phase 2 at the saved winner if needed."""
        state = json.loads(Path(f"{path}.phase.json").read_text())
        self.phase, self.winner, self._handed = int(state["phase"]), state["winner"], int(state["handed"])
        self._configs, self._first_config = dict(state["configs"]), state["first_config"]
        self._results = [(c, tuple(s)) for c, s in state["results"]]
        self.phase1_until_s = state.get("phase1_until_s")  # absent in checkpoints written before pacing
        if self.phase == 2:
            self._engine = self._make_phase2(dict(self.winner or {}))
        restore = getattr(self._engine, "restore", None)
        if restore is None:
            raise NotImplementedError(f"{type(self._engine).__name__} cannot restore a checkpoint")
        restore(path)
