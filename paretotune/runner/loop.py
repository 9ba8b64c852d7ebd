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
loop while the GPU waited: on GPU evaluators a save of :data:`~.ledger.COSTLY_SAVE_S` or more is made at most
once per :data:`~.ledger.SAVE_SPACING` x its time. A crash between engine saves loses the engine's learning since,
never a record.

Same seed, same records. Where nothing is measured on a GPU (a static campaign: registers, spills, occupancy
from the build), the steady schedule tells the engine each record in the order its candidate was issued, not in
the order its compile happened to finish (:func:`~.schedules.released_in_order`; each is stored as it comes all
the same): the engine sees the same tells in the same order, is asked at the same points, and proposes the same
candidates under the same ids whatever the compile times. (``results.jsonl`` keeps arrival order, which is
timing; by candidate id its records are the same.) The generational schedule tells a whole generation at once,
in issue order. On a GPU the steady schedule tells records as they come: measured times differ from run to run
anyway, and the GPU must not wait behind one slow compile. A ``search.wall_clock_s`` limit ends a run at a time.

After the budget, the no-ACF twins of front 0's ACF configs (:mod:`paretotune.search.twins`) go through the
same two commit points as one more batch, never told to the engine; a resume adds only the missing ones.

The loop is a few named steps (:func:`run_campaign`): set up the :class:`~.ledger.Ledger` (the state every step
shares), the baseline, the engine, the search (:mod:`.schedules`), the twins, then the timing summary.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from paretotune.build.base import Evaluator
from paretotune.campaign.load import Campaign
from paretotune.campaign.resolve import make_adapter, make_objectives
from paretotune.errors import UserError
from paretotune.kernels.base import baseline_config, baseline_words
from paretotune.objectives.base import Objective
from paretotune.records import Candidate, TrialRecord
from paretotune.runner.gpu_busy import HostLoad, record_timing
from paretotune.runner.ledger import Ledger, minimization_vector
from paretotune.runner.schedules import search
from paretotune.runner.start import make_engine, note_measurement, objective_columns
from paretotune.runner.state import InFlight, LoopState
from paretotune.search.base import SearchEngine, engine_errors
from paretotune.search.twins import twin_candidates
from paretotune.store.run_dir import RunDir
from paretotune.toolchain.ptxas import Ptxas


def run_campaign(campaign: Campaign, run: RunDir, ptxas: Ptxas, *,
                 on_record: Callable[[TrialRecord], None] | None = None, evaluator: Evaluator | None = None,
                 engine: SearchEngine | None = None, state: LoopState | None = None,
                 in_flight: InFlight | None = None, adapter: Any = None) -> list[TrialRecord]:
    """Run (or continue, with a resume's ``engine``, ``state`` and ``in_flight``) a campaign into ``run``, with an
    ``evaluator`` started early (closed here) and the checks' ``adapter`` if given; return the records written."""
    phases = Phases()
    adapter = adapter or make_adapter(campaign)
    objectives = make_objectives(campaign)
    started = time.monotonic()
    evaluator = evaluator or make_evaluator(campaign, ptxas, run, objectives)
    ledger = Ledger(campaign, run, ptxas, evaluator, objective_columns(campaign, objectives), state or LoopState(),
                    on_record, started)
    phases.mark("setup")
    host_load = HostLoad().start()  # the host's load while the GPU measures (run.json ``timing``)
    try:
        run_baseline(ledger, adapter)
        phases.mark("baseline")
        engine = open_engine(ledger, adapter, engine)
        stop_work_at = cut_at_wall_clock(ledger)
        phases.mark("engine")  # the search starts: the span GPU busy is taken over
        schedule = search(ledger, engine, in_flight)
        phases.mark("search")
        run_twins(ledger, engine, stop_work_at)
        phases.mark("twins")
    finally:
        host_load.stop()
        evaluator.close()
    phases.mark("close")
    record_timing(run, schedule=schedule, records=[r for r in ledger.written if not r.is_baseline],
                  wall_s=phases.since("engine"), phases_s=phases.spans(), host_load=host_load.summary(),
                  search_errors=engine_errors(engine))  # Helion's rounds once all ended early on one
    return ledger.written


def make_evaluator(campaign: Campaign, ptxas: Ptxas, run: RunDir, objectives: Sequence[Objective]) -> Evaluator:
    """The campaign's evaluator (:mod:`.evaluator`), looked up here by name so tests and benchmarks can swap it."""
    from paretotune.runner.evaluator import evaluator_for

    return evaluator_for(campaign, ptxas, run, objectives)


class Phases:
    """Where the wall time went (run.json ``timing``: ``phases_s``), marked as each step of the loop ends."""

    def __init__(self) -> None:
        self.marks = [("", time.monotonic())]

    def mark(self, name: str) -> None:
        self.marks.append((name, time.monotonic()))

    def since(self, name: str) -> float:
        """Seconds from the end of step ``name`` to the last mark."""
        return self.marks[-1][1] - dict(self.marks)[name]

    def spans(self) -> dict[str, float]:
        """Each step's seconds, by name."""
        return {name: round(t - self.marks[i][1], 3) for i, (name, t) in enumerate(self.marks[1:])}


def run_baseline(ledger: Ledger, adapter: Any) -> None:
    """The default-compiler baseline, evaluated first and kept (a resumed run has it); a failed one ends the run."""
    if ledger.state.next_id != 0:
        return
    campaign = ledger.campaign
    baseline = Candidate(candidate_id=0, generation=0, config=baseline_config(adapter, campaign.shapes), acf=None,
                         is_baseline=True)
    for rec in ledger.evaluator.stream([baseline]):
        ledger.keep(rec)
    ledger.state.next_id = 1
    if ledger.written[-1].status != "ok":
        raise UserError(f"{campaign.path}: the baseline ({baseline_words(adapter, campaign.shapes)}, no ACF) "
                        f"failed: {ledger.written[-1].error}")
    note_measurement(ledger.run, ledger.written[-1], campaign.shapes)


def open_engine(ledger: Ledger, adapter: Any, engine: SearchEngine | None) -> SearchEngine:
    """A resumed run's ``engine``, else a new one that knows the baseline; paced by the wall clock if any."""
    if engine is None:
        engine = make_engine(ledger.campaign, adapter, len(ledger.columns))
        know_baseline = getattr(engine, "know_baseline", None)  # e.g. sequential: the config to beat
        base = next((r for r in ledger.written if r.is_baseline), None)
        known = None if base is None or not base.config else minimization_vector(base, ledger.columns)
        if know_baseline is not None and known is not None:  # (config {}: each shape at its own config)
            know_baseline(base.config, known)
    pace = getattr(engine, "pace", None)
    wall_clock_s = ledger.spec.search.wall_clock_s
    if pace is not None and wall_clock_s:  # e.g. sequential: half the time left for configs
        pace(ledger.elapsed, wall_clock_s)
    return engine


def wall_clock_grace_s(spec: Any) -> float:
    """How long builds in flight at ``search.wall_clock_s`` may still finish: 5 % of it, at least 5 s."""
    return max(5.0, 0.05 * spec.search.wall_clock_s)


def cut_at_wall_clock(ledger: Ledger) -> Callable[[float | None], None] | None:
    """Tell an evaluator that can stop work when the wall clock (and its grace) ends; return how to lift it."""
    spec = ledger.spec
    stop_work_at = getattr(ledger.evaluator, "stop_work_at", None) if spec.search.wall_clock_s else None
    if stop_work_at is not None:  # a slow compile or a stuck measurement must not hold the run past it
        stop_work_at(time.monotonic() + spec.search.wall_clock_s - ledger.elapsed() + wall_clock_grace_s(spec))
    return stop_work_at


def run_twins(ledger: Ledger, engine: SearchEngine, stop_work_at: Callable[[float | None], None] | None) -> None:
    """The no-ACF twins of front 0's ACF configs: attribution, counted as evaluations, never told."""
    if stop_work_at is not None:
        stop_work_at(None)  # the twins (a few candidates) are attribution, not search: they run
    state = ledger.state
    twins = twin_candidates(ledger.run.results(), ledger.run.directions(), next_id=state.next_id,
                            generation=state.generation)
    if twins:
        state.next_id += len(twins)
        ledger.commit(engine, twins)
        ledger.finish(engine, InFlight(candidates=tuple(twins), tell=False))
