"""The campaign loop: baseline first, then ask → commit → evaluate → append → tell → commit, until the budget.

The engine never builds or measures; the evaluator never decides what to try; the run directory keeps every
record. Objective values reach the engine as minimization tuples ("max" objectives negated).

Two schedules, one set of commit points:

- *steady* (the default where the engine is asynchronous and the evaluator takes a :class:`Feed`): up to
  ``search.in_flight`` candidates are kept in flight; each record is told as it arrives, and the engine is
  asked for more as soon as fewer are in flight. No generation waits for its slowest compile, and the GPU
  worker is never left without a built candidate while the engine thinks.
- *generational* (``search.barrier: true``, engines that need whole generations, ncu batches, Ray): one
  generation is asked, evaluated and told at a time.

Crash safety. Candidates pass two commit points (:mod:`paretotune.store.checkpoint`):

1. *issued*: after ``ask``, the engine checkpoint (the proposals pending in it) and every candidate in
   flight with the id it was given are committed before any of the new ones is evaluated;
2. each record is appended and fsynced as soon as its candidate is measured (the store is the truth);
3. *told*: after ``tell``, the engine checkpoint and the new counters are committed, with the candidates
   still in flight (none, between generations).

A crash anywhere leaves a resumable run (:mod:`paretotune.runner.resume`): the in-flight candidates of the
last commit that have a stored record are told from that record, not evaluated again (records are appended
before ``tell``, so a crash between the two leaves stored records the engine still holds as pending), and the
others are evaluated again under the same ids. Before the first commit, only the baseline can be stored.

Costly engine checkpoints (CompileIQ's grows with the run: 0.13 s a save at 50 records, 0.5 s at 200) held the
loop while the GPU waited: on GPU evaluators a save of :data:`COSTLY_SAVE_S` or more is made at most once per
:data:`SAVE_SPACING` x its time. A crash between engine saves loses the engine's learning since, never a record.

Same seed, same records. Where nothing is measured on a GPU (a static campaign: registers, spills, occupancy
from the build), the steady schedule tells the engine each record in the order its candidate was issued, not in
the order its compile happened to finish (:func:`released_in_order`; each is stored as it comes all the same):
the engine sees the same tells in the same order, is asked at the same points, and proposes the same
candidates under the same ids whatever the compile times. (``results.jsonl`` keeps arrival order, which is
timing; by candidate id its records are the same.) The generational schedule tells a whole generation at once,
in issue order. On a GPU the steady schedule tells records as they come: measured times differ from run to run
anyway, and the GPU must not wait behind one slow compile. A ``search.wall_clock_s`` limit ends a run at a time.

After the budget, the no-ACF twins of front 0's ACF configs (:mod:`paretotune.search.twins`) go through the
same two commit points as one more batch, never told to the engine; a resume adds only the missing ones.
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from paretotune.campaign.load import Campaign
from paretotune.campaign.resolve import make_adapter, make_objectives
from paretotune.errors import UserError
from paretotune.build.base import Evaluator
from paretotune.kernels.base import baseline_config, baseline_words
from paretotune.objectives.base import Objective
from paretotune.pareto.attribution import TWIN_OF
from paretotune.records import Candidate, TrialRecord
from paretotune.runner.gpu_busy import HostLoad, record_timing
from paretotune.runner.start import make_engine, note_measurement, objective_columns
from paretotune.search.base import SearchEngine
from paretotune.search.twins import twin_candidates
from paretotune.store.checkpoint import Checkpointer
from paretotune.store.run_dir import ObjectiveColumn, RunDir
from paretotune.toolchain.acf import AcfStore
from paretotune.toolchain.ptxas import Ptxas


@dataclass
class LoopState:
    next_id: int = 0
    evaluated: int = 0  # search evaluations told (the baseline does not count against the budget)
    generation: int = 0
    elapsed_s: float = 0.0  # wall time this run has had before this loop: earlier processes, this one's start-up


@dataclass(frozen=True)
class InFlight:
    """The generation a crashed run had issued but not told: what a resumed loop finishes first."""

    candidates: tuple[Candidate, ...]
    stored: Mapping[int, TrialRecord] = field(default_factory=dict)  # their records already in the store
    tell: bool = True  # False when the restored engine does not hold them as pending (it cannot be told)


COSTLY_SAVE_S = 0.05  # an engine save this long or longer is spaced out on GPU campaigns (see the docstring)
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


def released_in_order(records: Iterable[TrialRecord], first_waiting: Callable[[], int | None]
                      ) -> Iterator[TrialRecord]:
    """``records`` as they arrive, each held until it is ``first_waiting()`` (the earliest-issued candidate not
    passed on yet; asked again after each one the caller takes). What is still held when the stream ends follows
    in arrival order, for the caller's checks to name."""
    held: dict[int, TrialRecord] = {}
    for rec in records:
        held[rec.candidate_id] = rec
        while (first := first_waiting()) in held:
            yield held.pop(first)
    yield from held.values()


def finite_record(record: TrialRecord) -> TrialRecord:
    """The record as it is stored: a NaN or infinite objective value is never recorded (every reader refuses
    one, and it could sit on a front); the candidate is stored as failed, saying which value it was."""
    bad = sorted(k for k, v in record.values.items() if not math.isfinite(v))
    if not bad:
        return record
    why = f"objective '{bad[0]}' is not a finite number ({record.values[bad[0]]!r})"
    return dataclasses.replace(record, status="failed", error=record.error or why,
                               values={k: v for k, v in record.values.items() if k not in bad})


def make_evaluator(campaign: Campaign, ptxas: Ptxas, run: RunDir, objectives: Sequence[Objective]) -> Evaluator:
    from paretotune.runner.evaluator import evaluator_for

    return evaluator_for(campaign, ptxas, run, objectives)


def wall_clock_grace_s(spec: Any) -> float:
    """How long builds in flight at ``search.wall_clock_s`` may still finish: 5 % of it, at least 5 s."""
    return max(5.0, 0.05 * spec.search.wall_clock_s)


def steady_schedule(campaign: Campaign, engine: SearchEngine, evaluator: Evaluator) -> bool:
    """Whether the loop keeps candidates in flight across generations (see the module docstring)."""
    from paretotune.search.base import is_asynchronous

    return (not campaign.spec.search.barrier and is_asynchronous(engine)
            and evaluator.accepts_feed)


def run_campaign(campaign: Campaign, run: RunDir, ptxas: Ptxas, *,
                 on_record: Callable[[TrialRecord], None] | None = None, evaluator: Evaluator | None = None,
                 engine: SearchEngine | None = None, state: LoopState | None = None,
                 in_flight: InFlight | None = None, adapter: Any = None) -> list[TrialRecord]:
    """Run (or continue, with a resume's ``engine``, ``state`` and ``in_flight``) a campaign into ``run``, with an
    ``evaluator`` started early (closed here) and the checks' ``adapter`` if given; return the records written."""
    marks = [("", time.monotonic())]  # where the wall time went (run.json ``timing``: ``phases_s``)
    adapter = adapter or make_adapter(campaign)
    objectives = make_objectives(campaign)
    columns = objective_columns(campaign, objectives)
    acfs, checkpoints = AcfStore(run.path / "acf"), Checkpointer(run.path)
    spec = campaign.spec
    state = state or LoopState()
    written: list[TrialRecord] = []
    started = time.monotonic()

    def run_elapsed(now: float | None = None) -> float:
        """The run's wall seconds: earlier processes' and this one's start-up (``state.elapsed_s``), then this loop."""
        return state.elapsed_s + (time.monotonic() if now is None else now) - started

    def keep(rec: TrialRecord) -> TrialRecord:
        rec = finite_record(rec)
        run.append(rec)
        written.append(rec)
        if on_record:
            on_record(rec)
        return rec

    saved_at, behind = -math.inf, False  # the last engine save; whether a commit skipped one since

    def commit(pending: Iterable[Candidate], final: bool = False) -> None:
        nonlocal saved_at, behind
        assert engine is not None
        now = time.monotonic()  # a GPU waits while the loop saves: costly saves are spaced out there
        save = (final or not evaluator.measures_on_gpu or checkpoints.engine_save_s < COSTLY_SAVE_S
                or now - saved_at >= SAVE_SPACING * checkpoints.engine_save_s)
        saved_at, behind = (now, False) if save else (saved_at, True)
        checkpoints.commit(engine, next_id=state.next_id, evaluated=state.evaluated, generation=state.generation,
                           elapsed_s=run_elapsed(now), pending=tuple(pending), save_engine=save)

    def may_propose() -> bool:
        """Budget (evaluations and wall clock) left for another proposal."""
        if spec.search.wall_clock_s and run_elapsed() > spec.search.wall_clock_s:
            return False
        return state.evaluated < spec.search.budget

    def propose(room: int) -> list[Candidate]:
        """Ask the engine (at most ``room`` candidates kept) and give the candidates their ids; [] when the
        engine is exhausted."""
        assert engine is not None
        proposals = engine.ask()[:room]
        if not proposals:
            return []
        state.generation += 1
        source = "compileiq" if spec.acf.kind == "generated" else "campaign acf list"
        out = []
        for p in proposals:  # each ACF is stored under its content hash before any candidate names it
            sha = None if p.acf is None else acfs.put(p.acf, ptxas_version=ptxas.major_minor,
                                                      target=campaign.target.name, source=source).sha256
            out.append(Candidate(candidate_id=state.next_id, generation=state.generation, config=p.config, acf=sha,
                                 engine_id=p.engine_id))
            state.next_id += 1
        return out

    def score(records: Mapping[int, TrialRecord], candidates: Iterable[Candidate]) -> dict[str, Any]:
        return {c.engine_id: minimization_vector(records[c.candidate_id], columns)
                for c in candidates if c.engine_id is not None}

    def finish(batch: InFlight) -> None:
        """Evaluate what is not stored yet, store it, tell the engine everything, commit."""
        assert engine is not None
        records = dict(batch.stored)
        todo = [c for c in batch.candidates if c.candidate_id not in records]
        if todo:
            by_id = {c.candidate_id: c for c in todo}
            for rec in evaluator.stream(todo):
                if rec.candidate_id in records or rec.candidate_id not in by_id:
                    raise RuntimeError(f"evaluator returned an unexpected record for candidate {rec.candidate_id}")
                twin_of = by_id[rec.candidate_id].twin_of
                if twin_of is not None:
                    rec = dataclasses.replace(rec, extra={**rec.extra, TWIN_OF: twin_of})
                records[rec.candidate_id] = keep(rec)
        lost = [c.candidate_id for c in batch.candidates if c.candidate_id not in records]
        if lost:
            raise RuntimeError(f"evaluator returned no record for candidate(s) {lost}")
        scores = score(records, batch.candidates)
        if batch.tell and scores:  # twins have no engine id: the engine never proposed them
            engine.tell(scores)
        state.evaluated += len(batch.candidates)
        commit(())

    def generational() -> None:
        """One generation at a time: ask, commit, evaluate all, tell, commit."""
        if in_flight is not None and in_flight.candidates:
            finish(in_flight)
        while may_propose():
            candidates = propose(spec.search.budget - state.evaluated)
            if not candidates:  # the engine exhausted a finite space: end early
                break
            commit(candidates)
            finish(InFlight(candidates=tuple(candidates)))

    def steady() -> None:  # noqa: C901 - the schedule reads best in one piece
        """Keep up to ``in_flight`` candidates in flight; tell each record as it comes, ask when room opens."""
        from paretotune.build.base import Feed
        from paretotune.build.pool import in_background

        assert engine is not None
        window = spec.search.in_flight or spec.search.pool_size
        pending: dict[int, Candidate] = {}  # issued (committed), not yet told
        untold: set[int] = set()  # in flight from a crashed run whose restored engine does not hold them
        feed = Feed()
        exhausted = False

        def refill() -> None:
            nonlocal exhausted
            while (not exhausted and len(pending) < window and may_propose()
                   and state.evaluated + len(pending) < spec.search.budget):
                candidates = propose(spec.search.budget - state.evaluated - len(pending))
                if not candidates:  # (room 0 cannot happen: the whole budget in flight ends the loop)
                    # nothing now, with candidates in flight: asked again as each comes back (a sequential
                    # search waits so for its config phase's last results); with none, the engine is done
                    exhausted = not pending
                    break
                pending.update((c.candidate_id, c) for c in candidates)
                commit(pending.values())
                feed.put(candidates)
            if exhausted or not may_propose() or state.evaluated + len(pending) >= spec.search.budget:
                feed.close()  # nothing more will be proposed; the evaluator finishes what is in flight

        def told(records: Sequence[TrialRecord]) -> None:
            """Tell the engine these stored records (one tell, one commit) and take them out of flight."""
            cands = [pending.pop(rec.candidate_id) for rec in records]
            scores = score({rec.candidate_id: rec for rec in records},
                           [c for c in cands if c.candidate_id not in untold])
            if scores:
                engine.tell(scores)
            state.evaluated += len(records)
            commit(pending.values())

        if in_flight is not None and in_flight.candidates:
            pending.update((c.candidate_id, c) for c in in_flight.candidates)
            if not in_flight.tell:
                untold.update(pending)
            if in_flight.stored:  # stored before the crash: told now, never evaluated again
                told([rec for _, rec in sorted(in_flight.stored.items())])
            feed.put([c for c in in_flight.candidates if c.candidate_id not in in_flight.stored])
        refill()
        # the evaluator drains in its own thread: the GPU measures the next candidate while this one is told
        records = in_background(evaluator.stream(feed))
        kept: set[int] = set()  # stored, not told yet

        def stored() -> Iterator[TrialRecord]:
            """Each record stored as it arrives: a crash loses no finished evaluation."""
            for rec in records:
                if rec.candidate_id not in pending or rec.candidate_id in kept:
                    raise RuntimeError(f"evaluator returned an unexpected record for candidate {rec.candidate_id}")
                twin_of = pending[rec.candidate_id].twin_of  # a twin batch in flight when a run was killed
                if twin_of is not None:
                    rec = dataclasses.replace(rec, extra={**rec.extra, TWIN_OF: twin_of})
                rec = keep(rec)
                kept.add(rec.candidate_id)
                yield rec

        arriving = stored()
        if not evaluator.measures_on_gpu:  # told in issue order: same seed, same records (module docstring)
            arriving = released_in_order(arriving, lambda: min(pending, default=None))
        try:
            for rec in arriving:
                kept.discard(rec.candidate_id)
                told([rec])
                refill()
        finally:  # on a crash, the evaluator's thread must not wait on the feed for more
            feed.close()
            records.close()
        if pending:
            raise RuntimeError(f"evaluator returned no record for candidate(s) {sorted(pending)}")

    evaluator = evaluator or make_evaluator(campaign, ptxas, run, objectives)
    marks.append(("setup", time.monotonic()))
    host_load = HostLoad().start()  # the host's load while the GPU measures (run.json ``timing``)
    try:
        if state.next_id == 0:  # the default-compiler baseline is always evaluated first and kept
            baseline = Candidate(candidate_id=0, generation=0, config=baseline_config(adapter, campaign.shapes), acf=None,
                                 is_baseline=True)
            for rec in evaluator.stream([baseline]):
                keep(rec)
            state.next_id = 1
            if written[-1].status != "ok":
                raise UserError(f"{campaign.path}: the baseline ({baseline_words(adapter, campaign.shapes)}, no ACF) "
                                f"failed: {written[-1].error}")
            note_measurement(run, written[-1], campaign.shapes)
        marks.append(("baseline", time.monotonic()))
        if engine is None:
            engine = make_engine(campaign, adapter, len(columns))
            know_baseline = getattr(engine, "know_baseline", None)  # e.g. sequential: the config to beat
            base = next((r for r in written if r.is_baseline), None)
            known = None if base is None or not base.config else minimization_vector(base, columns)
            if know_baseline is not None and known is not None:  # (config {}: each shape at its own config)
                know_baseline(base.config, known)
        pace = getattr(engine, "pace", None)
        if pace is not None and spec.search.wall_clock_s:  # e.g. sequential: half the time left for configs
            pace(run_elapsed, spec.search.wall_clock_s)
        stop_work_at = getattr(evaluator, "stop_work_at", None) if spec.search.wall_clock_s else None
        if stop_work_at is not None:  # a slow compile or a stuck measurement must not hold the run past it
            stop_work_at(time.monotonic() + spec.search.wall_clock_s - run_elapsed() + wall_clock_grace_s(spec))
        marks.append(("engine", time.monotonic()))  # the search starts: the span GPU busy is taken over
        schedule = "steady" if steady_schedule(campaign, engine, evaluator) else "generational"
        steady() if schedule == "steady" else generational()
        if behind or saved_at == -math.inf:  # the engine as it finished, where spacing skipped saves (or where a
            commit((), final=True)  # budget spent before the loop let nothing be proposed: a complete run all the same)
        marks.append(("search", time.monotonic()))
        if stop_work_at is not None:
            stop_work_at(None)  # the twins (a few candidates) are attribution, not search: they run
        twins = twin_candidates(run.results(), run.directions(), next_id=state.next_id, generation=state.generation)
        if twins:  # attribution: the same configs without their ACFs (counted as evaluations, never told)
            state.next_id += len(twins)
            commit(twins)
            finish(InFlight(candidates=tuple(twins), tell=False))
        marks.append(("twins", time.monotonic()))
    finally:
        host_load.stop()
        evaluator.close()
    marks.append(("close", time.monotonic()))
    record_timing(run, schedule=schedule, records=[r for r in written if not r.is_baseline],
                  wall_s=marks[-1][1] - dict(marks)["engine"],
                  phases_s={name: round(t - marks[i][1], 3) for i, (name, t) in enumerate(marks[1:])},
                  host_load=host_load.summary())
    return written
