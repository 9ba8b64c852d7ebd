"""The campaign loop: baseline first, then ask → commit → evaluate → append → tell → commit, until the budget.

The engine never builds or measures; the evaluator never decides what to try; the run directory keeps every
record. Objective values reach the engine as minimization tuples ("max" objectives negated).

Crash safety. Every generation passes two commit points (:mod:`paretotune.store.checkpoint`):

1. *issued*: after ``ask``, the engine checkpoint (the proposals pending in it) and the candidates with
   the ids they were given are committed before any evaluation starts;
2. each record is appended and fsynced as soon as its candidate is measured (the store is the truth);
3. *told*: after ``tell``, the engine checkpoint (nothing pending) and the new counters are committed.

A crash anywhere leaves a resumable run (:mod:`paretotune.campaign.resume`): the candidates of an *issued*
commit that have a stored record are told from that record, not evaluated again (records are appended before
``tell``, so a crash between the two leaves stored records the engine still holds as pending), and the others
are evaluated again under the same ids. Before the first commit, only the baseline can be stored.

After the budget, the no-ACF twins of front 0's ACF configs (:mod:`paretotune.search.twins`) go through the
same two commit points as one more batch, never told to the engine; a resume adds only the missing ones.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from paretotune.campaign.load import Campaign, check_acf_files, make_adapter, make_objectives
from paretotune.errors import UserError
from paretotune.objectives.base import Objective
from paretotune.pareto.attribution import TWIN_OF
from paretotune.records import Candidate, TrialRecord
from paretotune.search.base import Proposal, SearchEngine
from paretotune.search.twins import twin_candidates
from paretotune.store.checkpoint import Checkpointer
from paretotune.store.run_dir import ObjectiveColumn, RunDir
from paretotune.toolchain.acf import AcfStore
from paretotune.toolchain.ptxas import Ptxas


class Evaluator(Protocol):
    """Builds and measures candidates. An evaluator may also offer ``stream(candidates)``, an iterator of
    records as each finishes; the loop prefers it, so a crash loses no finished evaluation."""

    def evaluate(self, candidates: Sequence[Candidate]) -> list[TrialRecord]: ...
    def close(self) -> None: ...


@dataclass
class LoopState:
    next_id: int = 0
    evaluated: int = 0  # search evaluations told (the baseline does not count against the budget)
    generation: int = 0
    elapsed_s: float = 0.0  # loop time of earlier processes of this run (search.wall_clock_s spans resumes)


@dataclass(frozen=True)
class InFlight:
    """The generation a crashed run had issued but not told: what a resumed loop finishes first."""

    candidates: tuple[Candidate, ...]
    stored: Mapping[int, TrialRecord] = field(default_factory=dict)  # their records already in the store
    tell: bool = True  # False when the restored engine does not hold them as pending (it cannot be told)


def objective_columns(campaign: Campaign, objectives: Sequence[Objective]) -> list[ObjectiveColumn]:
    return [ObjectiveColumn(column=o.column(s.label, campaign.multi_shape), direction=o.effective_direction,
                            objective=o.name, shape=s.label)
            for s in campaign.shapes for o in objectives]


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


def make_engine(campaign: Campaign, adapter: Any, n_objectives: int) -> SearchEngine:
    from paretotune.search.registry import make_engine as build

    return build(campaign, adapter.space(), n_objectives)


def make_evaluator(campaign: Campaign, ptxas: Ptxas, run: RunDir, objectives: Sequence[Objective]) -> Evaluator:
    from paretotune.execution.evaluators import evaluator_for

    return evaluator_for(campaign, ptxas, run, objectives)


def run_campaign(campaign: Campaign, run: RunDir, ptxas: Ptxas, *,
                 on_record: Callable[[TrialRecord], None] | None = None,
                 engine: SearchEngine | None = None, state: LoopState | None = None,
                 in_flight: InFlight | None = None) -> list[TrialRecord]:
    """Run (or continue, with the ``engine``, ``state`` and ``in_flight`` of a resume) a campaign into ``run``;
    return every record written in this call."""
    adapter = make_adapter(campaign)
    objectives = make_objectives(campaign)
    columns = objective_columns(campaign, objectives)
    acfs = AcfStore(run.path / "acf")
    spec = campaign.spec
    state = state or LoopState()
    checkpoints = Checkpointer(run.path)
    written: list[TrialRecord] = []
    started = time.monotonic()

    def keep(rec: TrialRecord) -> None:
        run.append(rec)
        written.append(rec)
        if on_record:
            on_record(rec)

    def evaluate(candidates: Sequence[Candidate]) -> Iterable[TrialRecord]:
        stream = getattr(evaluator, "stream", None)
        return stream(candidates) if stream is not None else evaluator.evaluate(candidates)

    def commit(pending: Sequence[Candidate]) -> None:
        assert engine is not None
        checkpoints.commit(engine, next_id=state.next_id, evaluated=state.evaluated, generation=state.generation,
                           elapsed_s=state.elapsed_s + time.monotonic() - started, pending=tuple(pending))

    def finish(batch: InFlight) -> None:
        """Evaluate what is not stored yet, store it, tell the engine everything, commit."""
        assert engine is not None
        records = dict(batch.stored)
        todo = [c for c in batch.candidates if c.candidate_id not in records]
        if todo:
            by_id = {c.candidate_id: c for c in todo}
            for rec in evaluate(todo):
                if rec.candidate_id in records or rec.candidate_id not in by_id:
                    raise RuntimeError(f"evaluator returned an unexpected record for candidate {rec.candidate_id}")
                twin_of = by_id[rec.candidate_id].twin_of
                if twin_of is not None:
                    rec = dataclasses.replace(rec, extra={**rec.extra, TWIN_OF: twin_of})
                keep(rec)
                records[rec.candidate_id] = rec
        lost = [c.candidate_id for c in batch.candidates if c.candidate_id not in records]
        if lost:
            raise RuntimeError(f"evaluator returned no record for candidate(s) {lost}")
        scores = {c.engine_id: minimization_vector(records[c.candidate_id], columns)
                  for c in batch.candidates if c.engine_id is not None}
        if batch.tell and scores:  # twins have no engine id: the engine never proposed them
            engine.tell(scores)
        state.evaluated += len(batch.candidates)
        commit(())

    evaluator = make_evaluator(campaign, ptxas, run, objectives)
    try:
        if state.next_id == 0:  # the default-compiler baseline is always evaluated first and kept
            baseline = Candidate(candidate_id=0, generation=0, config=adapter.default_config(), acf=None,
                                 is_baseline=True)
            for rec in evaluate([baseline]):
                keep(rec)
            state.next_id = 1
            if written[-1].status != "ok":
                raise UserError(f"{campaign.path}: the baseline (default config, no ACF) failed: {written[-1].error}")
        engine = engine or make_engine(campaign, adapter, len(columns))
        if in_flight is not None and in_flight.candidates:
            finish(in_flight)
        while state.evaluated < spec.search.budget:
            if spec.search.wall_clock_s and state.elapsed_s + time.monotonic() - started > spec.search.wall_clock_s:
                break
            proposals = engine.ask()[: spec.search.budget - state.evaluated]
            if not proposals:  # the engine exhausted a finite space: end early
                break
            state.generation += 1
            candidates = [_candidate(p, state, acfs, ptxas, campaign) for p in proposals]
            commit(candidates)
            finish(InFlight(candidates=tuple(candidates)))
        twins = twin_candidates(run.results(), run.directions(), next_id=state.next_id, generation=state.generation)
        if twins:  # attribution: the same configs without their ACFs (counted as evaluations, never told)
            state.next_id += len(twins)
            commit(twins)
            finish(InFlight(candidates=tuple(twins), tell=False))
    finally:
        evaluator.close()
    return written


def _candidate(p: Proposal, state: LoopState, acfs: AcfStore, ptxas: Ptxas, campaign: Campaign) -> Candidate:
    sha = None
    if p.acf is not None:
        source = "compileiq" if campaign.spec.acf.kind == "generated" else "campaign acf list"
        sha = acfs.put(p.acf, ptxas_version=ptxas.major_minor, target=campaign.target.name, source=source).sha256
    cand = Candidate(candidate_id=state.next_id, generation=state.generation, config=p.config, acf=sha,
                     engine_id=p.engine_id)
    state.next_id += 1
    return cand


def run_meta(campaign: Campaign, ptxas: Ptxas, columns: Sequence[ObjectiveColumn], seed: int) -> dict[str, Any]:
    import platform

    from paretotune import __version__

    versions: dict[str, str] = {"paretotune": __version__, "ptxas": ptxas.version, "python": platform.python_version()}
    for dist in ("triton", "torch", "compileiq", "helion"):
        try:  # package metadata: importing helion just for its version would take seconds
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return {"campaign": campaign.spec.name, "campaign_path": str(campaign.path), "target": campaign.target.name,
            "shapes": [s.label for s in campaign.shapes], "seed": seed, "versions": versions,
            "ptxas_path": str(ptxas.path), "objective_columns": [c.__dict__ for c in columns],
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def prepare_run(campaign: Campaign, ptxas: Ptxas, seed: int) -> dict[str, Any]:
    """Everything that can be checked before a run directory exists (objectives, the kernel import and its
    shapes, a CUDA GPU when an objective needs one); returns the run's metadata."""
    from paretotune.execution.gpu_check import require_gpu_for

    check_acf_files(campaign)
    objectives = make_objectives(campaign)
    make_adapter(campaign, trial_import=True)  # resolve the kernel before any work: a typo fails now
    require_gpu_for(objectives, f"{campaign.path}: objectives", backend=campaign.spec.execution.backend)
    return run_meta(campaign, ptxas, objective_columns(campaign, objectives), seed)


def start_run(campaign: Campaign, out: Path, ptxas: Ptxas, seed: int) -> RunDir:
    """Create the run directory with the campaign copy and metadata (for callers that lock it themselves)."""
    objectives = make_objectives(campaign)
    make_adapter(campaign)
    run = RunDir(out)
    run.create(campaign.text, run_meta(campaign, ptxas, objective_columns(campaign, objectives), seed))
    return run
