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

Give both engines one de-duplication cache, so that phase 2's "no ACF" option at the winner is answered
from phase 1 instead of being evaluated again.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from paretotune.search.base import Proposal, SearchEngine
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
                 phase1_budget: int) -> None:
        if phase1_budget < 1:
            raise ValueError(f"phase1_budget must be >= 1, got {phase1_budget}")
        self._phase1, self._make_phase2 = phase1, phase2
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

    def pace(self, clock: Callable[[], float], wall_clock_s: float) -> None:
        """Bound phase 1 by time as well: it ends once ``clock()`` (the run's wall seconds) passes the middle of
        what was left of ``wall_clock_s`` when the search began. Called by the loop for a campaign with a
        wall-clock budget; a restored engine keeps the point it had."""
        self._clock = clock
        if self.phase == 1 and self.phase1_until_s is None:
            began = clock()
            self.phase1_until_s = began + max(0.0, wall_clock_s - began) / 2

    def _phase1_open(self) -> bool:
        if self._handed >= self.phase1_budget:
            return False
        return self._clock is None or self.phase1_until_s is None or self._clock() < self.phase1_until_s

    def _start_phase2(self) -> None:
        self.winner = knee_config(self._results) if self._results else dict(self._first_config or {})
        self.phase, self._engine = 2, self._make_phase2(self.winner)

    def ask(self) -> list[Proposal]:
        if self.phase == 1:
            proposals = self._phase1.ask() if self._phase1_open() else []
            proposals = proposals[: self.phase1_budget - self._handed]
            if proposals:
                self._handed += len(proposals)
                self._configs.update({p.engine_id: p.config for p in proposals})
                if self._first_config is None:
                    self._first_config = proposals[0].config
                return [Proposal(engine_id=f"s1:{p.engine_id}", config=p.config, acf=p.acf) for p in proposals]
            self._start_phase2()
        return [Proposal(engine_id=f"s2:{p.engine_id}", config=p.config, acf=p.acf) for p in self._engine.ask()]

    def tell(self, scores: dict[str, Score]) -> None:
        prefix = f"s{self.phase}:"
        inner = {k.removeprefix(prefix): v for k, v in scores.items() if k.startswith(prefix)}
        if self.phase == 1:
            self._results += [(self._configs[k], v) for k, v in inner.items() if v is not None]
        if inner:
            self._engine.tell(inner)

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
