"""The campaign loop: baseline first, then ask → store ACFs → evaluate → append → tell, until the budget.

The engine never builds or measures; the evaluator never decides what to try; the run directory keeps every
record. Objective values reach the engine as minimization tuples ("max" objectives negated).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from paretotune.campaign.load import Campaign, make_adapter, make_objectives
from paretotune.errors import UserError
from paretotune.objectives.base import Objective
from paretotune.records import Candidate, TrialRecord
from paretotune.search.base import Proposal, SearchEngine
from paretotune.store.run_dir import ObjectiveColumn, RunDir
from paretotune.toolchain.acf import AcfStore
from paretotune.toolchain.ptxas import Ptxas


class Evaluator(Protocol):
    def evaluate(self, candidates: Sequence[Candidate]) -> list[TrialRecord]: ...
    def close(self) -> None: ...


@dataclass
class LoopState:
    next_id: int = 0
    evaluated: int = 0  # search evaluations (the baseline does not count against the budget)
    generation: int = 0


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
                 engine: SearchEngine | None = None, state: LoopState | None = None) -> list[TrialRecord]:
    """Run (or continue) a campaign into ``run``; return every record written in this call."""
    adapter = make_adapter(campaign)
    objectives = make_objectives(campaign)
    columns = objective_columns(campaign, objectives)
    acfs = AcfStore(run.path / "acf")
    spec = campaign.spec
    state = state or LoopState()
    written: list[TrialRecord] = []

    def keep(records: Sequence[TrialRecord]) -> None:
        for rec in sorted(records, key=lambda r: r.candidate_id):
            run.append(rec)
            written.append(rec)
            if on_record:
                on_record(rec)

    evaluator = make_evaluator(campaign, ptxas, run, objectives)
    started = time.monotonic()
    try:
        if state.next_id == 0:  # the default-compiler baseline is always evaluated first and kept
            baseline = Candidate(candidate_id=0, generation=0, config=adapter.default_config(), acf=None,
                                 is_baseline=True)
            keep(evaluator.evaluate([baseline]))
            state.next_id = 1
            if written[-1].status != "ok":
                raise UserError(f"{campaign.path}: the baseline (default config, no ACF) failed: {written[-1].error}")
        engine = engine or make_engine(campaign, adapter, len(columns))
        while state.evaluated < spec.search.budget:
            if spec.search.wall_clock_s and time.monotonic() - started > spec.search.wall_clock_s:
                break
            proposals = engine.ask()[: spec.search.budget - state.evaluated]
            state.generation += 1
            candidates = [_candidate(p, state, acfs, ptxas, campaign) for p in proposals]
            records = evaluator.evaluate(candidates)
            keep(records)
            by_id = {r.candidate_id: r for r in records}
            engine.tell({c.engine_id: minimization_vector(by_id[c.candidate_id], columns)
                         for c in candidates if c.engine_id is not None})
            state.evaluated += len(candidates)
            engine.save(str(run.path / "engine.ckpt"))
    finally:
        evaluator.close()
    return written


def _candidate(p: Proposal, state: LoopState, acfs: AcfStore, ptxas: Ptxas, campaign: Campaign) -> Candidate:
    sha = None
    if p.acf is not None:
        sha = acfs.put(p.acf, ptxas_version=ptxas.major_minor, target=campaign.target.name,
                       source="compileiq").sha256
    cand = Candidate(candidate_id=state.next_id, generation=state.generation, config=p.config, acf=sha,
                     engine_id=p.engine_id)
    state.next_id += 1
    return cand


def run_meta(campaign: Campaign, ptxas: Ptxas, columns: Sequence[ObjectiveColumn], seed: int) -> dict[str, Any]:
    import platform

    from paretotune import __version__

    versions: dict[str, str] = {"paretotune": __version__, "ptxas": ptxas.version, "python": platform.python_version()}
    for mod in ("triton", "torch", "compileiq", "helion"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - an optional package may be missing or broken
            pass
    return {"campaign": campaign.spec.name, "campaign_path": str(campaign.path), "target": campaign.target.name,
            "shapes": [s.label for s in campaign.shapes], "seed": seed, "versions": versions,
            "ptxas_path": str(ptxas.path), "objective_columns": [c.__dict__ for c in columns],
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def start_run(campaign: Campaign, out: Path, ptxas: Ptxas, seed: int) -> RunDir:
    """Create the run directory with the campaign copy and metadata."""
    objectives = make_objectives(campaign)
    make_adapter(campaign)  # resolve the kernel before any work: a typo fails now, not after the baseline
    run = RunDir(out)
    run.create(campaign.text, run_meta(campaign, ptxas, objective_columns(campaign, objectives), seed))
    return run
