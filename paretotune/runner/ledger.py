"""What every step of the loop shares, and the steps both schedules take with it: store a record as it arrives,
give the engine's proposals their ids, commit a checkpoint, finish a batch (evaluate, store, tell, commit).

One object holds the loop's mutable state (counters, records written, when the engine was last saved) so the
schedules (:mod:`paretotune.runner.schedules`) and the loop (:mod:`paretotune.runner.loop`) pass it explicitly
instead of sharing closures. The commit points and the spacing of costly engine saves are the loop's
(see its module docstring).
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from paretotune.build.base import Evaluator
from paretotune.campaign.load import Campaign
from paretotune.pareto.attribution import TWIN_OF
from paretotune.records import Candidate, TrialRecord
from paretotune.runner.state import InFlight, LoopState
from paretotune.search.base import SearchEngine
from paretotune.store.checkpoint import Checkpointer
from paretotune.store.run_dir import ObjectiveColumn, RunDir
from paretotune.toolchain.acf import AcfStore
from paretotune.toolchain.ptxas import Ptxas

COSTLY_SAVE_S = 0.05  # an engine save this long or longer is spaced out on GPU campaigns (see the loop's docstring)
SAVE_SPACING = 20.0  # ... to at most one per SAVE_SPACING x its duration: saves take <= ~5 % of the loop


def minimization_vector(record: TrialRecord, columns: Sequence[ObjectiveColumn]) -> tuple[float, ...] | None:
    """The record's objectives as a tuple to minimize, or None if it failed or has a missing value."""
    if record.status != "ok":
        return None
    out = []
    for col in columns:
        v = record.values.get(col.column)
        if v is None or not math.isfinite(v):
            return None
        out.append(-v if col.direction == "max" else v)
    return tuple(out)


def finite_record(record: TrialRecord) -> TrialRecord:
    """The record as it is stored: a NaN or infinite objective value is never recorded (every reader refuses
    one, and it could sit on a front); the candidate is stored as failed, saying which value it was."""
    bad = sorted(k for k, v in record.values.items() if not math.isfinite(v))
    if not bad:
        return record
    why = f"objective '{bad[0]}' is not a finite number ({record.values[bad[0]]!r})"
    return dataclasses.replace(record, status="failed", error=record.error or why,
                               values={k: v for k, v in record.values.items() if k not in bad})


class Ledger:
    """The run as the loop keeps it: its counters (``state``), the records this call wrote, the checkpoints."""

    def __init__(self, campaign: Campaign, run: RunDir, ptxas: Ptxas, evaluator: Evaluator,
                 columns: Sequence[ObjectiveColumn], state: LoopState,
                 on_record: Callable[[TrialRecord], None] | None, started: float) -> None:
        """``started``: ``time.monotonic()`` when this loop began (``state.elapsed_s`` is the run's time before)."""
        self.campaign, self.spec, self.run, self.ptxas = campaign, campaign.spec, run, ptxas
        self.evaluator, self.columns, self.state, self.on_record = evaluator, columns, state, on_record
        self.acfs, self.checkpoints = AcfStore(run.path / "acf"), Checkpointer(run.path)
        self.written: list[TrialRecord] = []
        self.started = started
        self.saved_at, self.behind = -math.inf, False  # the last engine save; whether a commit skipped one since

    def elapsed(self, now: float | None = None) -> float:
        """The run's wall seconds: earlier processes' and this one's start-up (``state.elapsed_s``), then this loop."""
        return self.state.elapsed_s + (time.monotonic() if now is None else now) - self.started

    def keep(self, rec: TrialRecord, twin_of: Any = None) -> TrialRecord:
        """Store a record as it arrives (a twin's marked with the candidate it twins): a crash loses none."""
        if twin_of is not None:
            rec = dataclasses.replace(rec, extra={**rec.extra, TWIN_OF: twin_of})
        rec = finite_record(rec)
        self.run.append(rec)
        self.written.append(rec)
        if self.on_record:
            self.on_record(rec)
        return rec

    def commit(self, engine: SearchEngine, pending: Iterable[Candidate], final: bool = False) -> None:
        """A checkpoint with ``pending`` in flight; on a GPU a costly engine save is spaced out."""
        now = time.monotonic()  # a GPU waits while the loop saves: costly saves are spaced out there
        save = (final or not self.evaluator.measures_on_gpu or self.checkpoints.engine_save_s < COSTLY_SAVE_S
                or now - self.saved_at >= SAVE_SPACING * self.checkpoints.engine_save_s)
        self.saved_at, self.behind = (now, False) if save else (self.saved_at, True)
        state = self.state
        self.checkpoints.commit(engine, next_id=state.next_id, evaluated=state.evaluated, generation=state.generation,
                                elapsed_s=self.elapsed(now), pending=tuple(pending), save_engine=save)

    def commit_engine(self, engine: SearchEngine) -> None:
        """The engine as it finished, where spacing skipped saves (or where a budget spent before the loop let
        nothing be proposed: a complete run all the same)."""
        if self.behind or self.saved_at == -math.inf:
            self.commit(engine, (), final=True)

    def may_propose(self) -> bool:
        """Budget (evaluations and wall clock) left for another proposal."""
        search = self.spec.search
        if search.wall_clock_s and self.elapsed() > search.wall_clock_s:
            return False
        return self.state.evaluated < search.budget

    def propose(self, engine: SearchEngine, room: int) -> list[Candidate]:
        """Ask the engine (at most ``room`` candidates kept) and give the candidates their ids; [] when the
        engine is exhausted."""
        proposals = engine.ask()[:room]
        if not proposals:
            return []
        state = self.state
        state.generation += 1
        source = "compileiq" if self.spec.acf.kind == "generated" else "campaign acf list"
        out = []
        for p in proposals:  # each ACF is stored under its content hash before any candidate names it
            sha = None if p.acf is None else self.acfs.put(p.acf, ptxas_version=self.ptxas.major_minor,
                                                           target=self.campaign.target.name, source=source).sha256
            out.append(Candidate(candidate_id=state.next_id, generation=state.generation, config=p.config, acf=sha,
                                 engine_id=p.engine_id))
            state.next_id += 1
        return out

    def score(self, records: Mapping[int, TrialRecord], candidates: Iterable[Candidate]) -> dict[str, Any]:
        """What the engine is told: each of its candidates' minimization vector, by the engine's id."""
        return {c.engine_id: minimization_vector(records[c.candidate_id], self.columns)
                for c in candidates if c.engine_id is not None}

    def finish(self, engine: SearchEngine, batch: InFlight) -> None:
        """Evaluate what is not stored yet, store it, tell the engine everything, commit."""
        records = dict(batch.stored)
        todo = [c for c in batch.candidates if c.candidate_id not in records]
        if todo:
            by_id = {c.candidate_id: c for c in todo}
            for rec in self.evaluator.stream(todo):
                if rec.candidate_id in records or rec.candidate_id not in by_id:
                    raise RuntimeError(f"evaluator returned an unexpected record for candidate {rec.candidate_id}")
                records[rec.candidate_id] = self.keep(rec, by_id[rec.candidate_id].twin_of)
        lost = [c.candidate_id for c in batch.candidates if c.candidate_id not in records]
        if lost:
            raise RuntimeError(f"evaluator returned no record for candidate(s) {lost}")
        scores = self.score(records, batch.candidates)
        if batch.tell and scores:  # twins have no engine id: the engine never proposed them
            engine.tell(scores)
        self.state.evaluated += len(batch.candidates)
        self.commit(engine, ())
