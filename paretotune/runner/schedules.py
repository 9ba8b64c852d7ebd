"""The loop's two schedules, steady and generational (:mod:`paretotune.runner.loop` says when each runs and what
each promises): how candidates are asked for, fed to the evaluator and told, over one :class:`Ledger`."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from paretotune.build.base import Evaluator, Feed
from paretotune.campaign.load import Campaign
from paretotune.records import Candidate, TrialRecord
from paretotune.runner.ledger import Ledger
from paretotune.runner.state import InFlight
from paretotune.search.base import SearchEngine, is_asynchronous


def steady_schedule(campaign: Campaign, engine: SearchEngine, evaluator: Evaluator) -> bool:
    """Whether the loop keeps candidates in flight across generations (see the loop's docstring)."""
    return (not campaign.spec.search.barrier and is_asynchronous(engine)
            and evaluator.accepts_feed)


def search(ledger: Ledger, engine: SearchEngine, in_flight: InFlight | None) -> str:
    """Run the search to its budget (finishing ``in_flight`` first) and commit the engine as it ended; return
    the schedule's name."""
    if steady_schedule(ledger.campaign, engine, ledger.evaluator):
        Steady(ledger, engine).run(in_flight)
        schedule = "steady"
    else:
        generational(ledger, engine, in_flight)
        schedule = "generational"
    ledger.commit_engine(engine)
    return schedule


def generational(ledger: Ledger, engine: SearchEngine, in_flight: InFlight | None) -> None:
    """One generation at a time: ask, commit, evaluate all, tell, commit."""
    if in_flight is not None and in_flight.candidates:
        ledger.finish(engine, in_flight)
    while ledger.may_propose():
        candidates = ledger.propose(engine, ledger.spec.search.budget - ledger.state.evaluated)
        if not candidates:  # the engine exhausted a finite space: end early
            break
        ledger.commit(engine, candidates)
        ledger.finish(engine, InFlight(candidates=tuple(candidates)))


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


class Steady:
    """Keep up to ``search.in_flight`` candidates in flight; tell each record as it comes, ask when room opens."""

    def __init__(self, ledger: Ledger, engine: SearchEngine) -> None:
        search = ledger.spec.search
        self.ledger, self.engine, self.budget = ledger, engine, search.budget
        self.window = search.in_flight or search.pool_size
        self.pending: dict[int, Candidate] = {}  # issued (committed), not yet told
        self.untold: set[int] = set()  # in flight from a crashed run whose restored engine does not hold them
        self.kept: set[int] = set()  # stored, not told yet
        self.feed = Feed()
        self.exhausted = False

    def run(self, in_flight: InFlight | None) -> None:
        """Resume what a crashed run had in flight, fill the window, then tell and refill as records arrive."""
        from paretotune.build.pool import in_background

        if in_flight is not None and in_flight.candidates:
            self.resume(in_flight)
        self.refill()
        # the evaluator drains in its own thread: the GPU measures the next candidate while this one is told
        records = in_background(self.ledger.evaluator.stream(self.feed))
        arriving = self.stored(records)
        if not self.ledger.evaluator.measures_on_gpu:  # told in issue order: same seed, same records (loop docstring)
            arriving = released_in_order(arriving, lambda: min(self.pending, default=None))
        try:
            for rec in arriving:
                self.kept.discard(rec.candidate_id)
                self.told([rec])
                self.refill()
        finally:  # on a crash, the evaluator's thread must not wait on the feed for more
            self.feed.close()
            records.close()
        if self.pending:
            raise RuntimeError(f"evaluator returned no record for candidate(s) {sorted(self.pending)}")

    def resume(self, in_flight: InFlight) -> None:
        """Take a crashed run's batch back in flight: its stored records told now, never evaluated again."""
        self.pending.update((c.candidate_id, c) for c in in_flight.candidates)
        if not in_flight.tell:
            self.untold.update(self.pending)
        if in_flight.stored:
            self.told([rec for _, rec in sorted(in_flight.stored.items())])
        self.feed.put([c for c in in_flight.candidates if c.candidate_id not in in_flight.stored])

    def room(self) -> int:
        """Evaluations the budget has left beyond those told and those in flight."""
        return self.budget - self.ledger.state.evaluated - len(self.pending)

    def refill(self) -> None:
        """Ask for more while the window and the budget have room; close the feed once nothing more will come."""
        ledger = self.ledger
        while not self.exhausted and len(self.pending) < self.window and ledger.may_propose() and self.room() > 0:
            candidates = ledger.propose(self.engine, self.room())
            if not candidates:  # (room 0 cannot happen: the whole budget in flight ends the loop)
                # nothing now, with candidates in flight: asked again as each comes back (a sequential
                # search waits so for its config phase's last results); with none, the engine is done
                self.exhausted = not self.pending
                break
            self.pending.update((c.candidate_id, c) for c in candidates)
            ledger.commit(self.engine, self.pending.values())
            self.feed.put(candidates)
        if self.exhausted or not ledger.may_propose() or self.room() <= 0:
            self.feed.close()  # nothing more will be proposed; the evaluator finishes what is in flight

    def told(self, records: Sequence[TrialRecord]) -> None:
        """Tell the engine these stored records (one tell, one commit) and take them out of flight."""
        cands = [self.pending.pop(rec.candidate_id) for rec in records]
        scores = self.ledger.score({rec.candidate_id: rec for rec in records},
                                   [c for c in cands if c.candidate_id not in self.untold])
        if scores:
            self.engine.tell(scores)
        self.ledger.state.evaluated += len(records)
        self.ledger.commit(self.engine, self.pending.values())

    def stored(self, records: Iterable[TrialRecord]) -> Iterator[TrialRecord]:
        """Each record stored as it arrives: a crash loses no finished evaluation."""
        for rec in records:
            if rec.candidate_id not in self.pending or rec.candidate_id in self.kept:
                raise RuntimeError(f"evaluator returned an unexpected record for candidate {rec.candidate_id}")
            # a twin batch in flight when a run was killed keeps its twins' mark
            rec = self.ledger.keep(rec, self.pending[rec.candidate_id].twin_of)
            self.kept.add(rec.candidate_id)
            yield rec
