"""Continue a run after a crash or SIGKILL: no completed evaluation lost, none repeated.

What a resume rebuilds, and from where:

- the campaign: the copy in the run directory (``campaign.yaml``), resolved against the original campaign
  path recorded in ``run.json`` (relative kernel paths) and run with the recorded seed;
- the engine: from the engine checkpoint that ``checkpoint.json`` names (:mod:`paretotune.store.checkpoint`);
- the loop counters (next candidate id, evaluations, generation): from the stored records, cross-checked
  against the checkpoint, so an edited or truncated results file is an error and not a silent re-run;
- the generation in flight: candidates of the last *issued* commit. Those with a stored record are told to
  the engine from that record; the others are evaluated again under their ids.

An engine that cannot restore a checkpoint starts afresh (its search restarts; the records and the ids go on,
so nothing is lost or repeated, but earlier points may be proposed again).

Not reproducible: CompileIQ's sampler takes no seed, so a resumed run does not propose what an uninterrupted
run would have. Equal outcomes are not promised; a complete, duplicate-free record of every evaluation is.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paretotune.campaign.acf_check import check_acf_files, check_search_space, check_toolchain
from paretotune.campaign.load import Campaign, campaign_from_text
from paretotune.campaign.resolve import make_adapter, make_objectives
from paretotune.errors import ToolchainError, UserError
from paretotune.kernels.base import baseline_words
from paretotune.records import TrialRecord
from paretotune.runner.state import InFlight, LoopState
from paretotune.runner.start import make_engine, objective_columns
from paretotune.search.base import SearchEngine
from paretotune.search.twins import missing_twins
from paretotune.store.checkpoint import LoopCheckpoint, read_checkpoint
from paretotune.store.run_dir import CAMPAIGN, META, RunDir
from paretotune.toolchain.acf import AcfStore


@dataclass(frozen=True)
class ResumePoint:
    """Where a stopped run continues."""

    state: LoopState
    in_flight: InFlight | None
    checkpoint: LoopCheckpoint | None
    records: tuple[TrialRecord, ...]


def open_run(path: Path | str) -> RunDir:
    """The run directory, every file a resume reads checked first (read-only), as every command checks it;
    a torn last line is read past: :func:`prepare_resume` cuts it off once its checks passed."""
    from paretotune.front import open_run as open_checked

    return open_checked(path, repairing=True)


def reopen_campaign(run: RunDir) -> Campaign:
    """The campaign as the run stored it, with the run's seed."""
    meta = run.meta()
    try:
        text = run.campaign_text()
    except OSError as exc:
        raise UserError(f"{run.path}: cannot read the campaign copy ({exc.strerror})") from None
    original = Path(meta.get("campaign_path") or run.path / "campaign.yaml")
    campaign = campaign_from_text(text, original)
    return campaign.with_seed(meta.get("seed", campaign.spec.seed))  # RunDir.meta checked it is an int


def check_ptxas(run: RunDir, campaign: Campaign, ptxas: Any) -> None:
    """The run's ACFs were made for the ptxas release it started with; another release would reject them."""
    made_with = str(run.meta().get("versions", {}).get("ptxas", ""))
    if made_with and ".".join(made_with.split(".")[:2]) != ptxas.major_minor:
        raise ToolchainError(f"{run.path}: the run was made with ptxas {made_with}, but {ptxas.path} is "
                             f"{ptxas.version}; its ACFs need the same release (set PARETOTUNE_PTXAS)")


def resume_point(run: RunDir) -> ResumePoint:
    """Rebuild the loop state from the stored records and the last commit. Read-only: the records were checked
    against the commit as every reader checks them (duplicates, missing or unknown candidates:
    :func:`paretotune.store.checkpoint.check_against_records`), a torn last line read past; it is cut off by
    :meth:`RunDir.recover` only once the resume is sure to proceed."""
    records = tuple(run.records())
    by_id = {rec.candidate_id: rec for rec in records}
    baseline = by_id.get(0)
    cp = read_checkpoint(run.path)
    if cp is None:  # stopped before the first generation was issued: at most the baseline is stored
        return ResumePoint(state=LoopState(next_id=1 if baseline else 0), in_flight=None, checkpoint=None,
                           records=records)
    pending_ids = {c.candidate_id for c in cp.pending}
    state = LoopState(next_id=cp.next_id, evaluated=cp.evaluated, generation=cp.generation, elapsed_s=cp.elapsed_s)
    in_flight = None
    if cp.pending:
        in_flight = InFlight(candidates=cp.pending,
                             stored={i: by_id[i] for i in sorted(pending_ids) if i in by_id},
                             tell=cp.engine_pending)
    return ResumePoint(state=state, in_flight=in_flight, checkpoint=cp, records=records)


def check_in_flight_acfs(run: RunDir, point: ResumePoint, ptxas: Any, target: str) -> None:
    """Every ACF a candidate still to be evaluated needs is present and made for this ptxas and target."""
    if point.in_flight is None:
        return
    store = AcfStore(run.path / "acf")
    for cand in point.in_flight.candidates:
        if cand.acf is None or cand.candidate_id in point.in_flight.stored:
            continue
        if not store.path(cand.acf).is_file():
            raise UserError(f"{store.path(cand.acf)}: missing ACF of in-flight candidate {cand.candidate_id}")
        store.check_compatible(cand.acf, ptxas.version, target)


def restore_engine(campaign: Campaign, adapter: Any, n_objectives: int, run: RunDir,
                   point: ResumePoint) -> tuple[SearchEngine, ResumePoint]:
    """A fresh engine with the checkpoint loaded; if the engine cannot restore, a fresh one whose in-flight
    candidates are then stored but not told (it never proposed them)."""
    engine = make_engine(campaign, adapter, n_objectives)
    cp = point.checkpoint
    if cp is None:
        return engine, point
    restore = getattr(engine, "restore", None)
    if cp.engine_file and restore is not None:
        path = run.path / cp.engine_file
        try:
            restore(str(path))
            return engine, point
        except NotImplementedError:
            engine = make_engine(campaign, adapter, n_objectives)  # restore may have half-loaded the first one
        except Exception as exc:  # noqa: BLE001 - CompileIQ raises several types for a bad checkpoint
            raise UserError(f"{path}: cannot restore the search engine ({type(exc).__name__}: {exc})") from None
    in_flight = point.in_flight
    if in_flight is not None:
        in_flight = InFlight(candidates=in_flight.candidates, stored=in_flight.stored, tell=False)
    return engine, ResumePoint(state=point.state, in_flight=in_flight, checkpoint=cp, records=point.records)


@dataclass(frozen=True)
class Resumption:
    """Everything ``run_campaign`` needs to continue a run (``engine`` None: it builds one after the baseline)."""

    campaign: Campaign
    point: ResumePoint
    engine: SearchEngine | None
    twins_missing: bool = False  # the search ended but front candidates still lack their no-ACF twins

    @property
    def complete(self) -> bool:
        return (self.point.in_flight is None and self.point.state.evaluated >= self.campaign.spec.search.budget
                and not self.twins_missing)


@contextlib.contextmanager
def naming_the_copy(run: RunDir) -> Iterator[None]:
    """Errors in the campaign name the file that was read, the run's copy, not the original the run was
    started from (whose path the campaign keeps, for relative paths): the copy may have been edited since."""
    original = Path(run.meta().get("campaign_path") or run.path / CAMPAIGN)
    try:
        yield
    except UserError as exc:
        message = str(exc)
        for prefix in dict.fromkeys((f"{original}:", f"{original.resolve()}:")):
            if message.startswith(prefix):
                raise type(exc)(f"{run.path / CAMPAIGN}:{message[len(prefix):]}") from None
        raise


def prepare_resume(run: RunDir, ptxas: Any, *, expect: Campaign | None = None,
                   seed: int | None = None) -> Resumption:
    """Check everything a resume depends on before any compile: the campaign copy (and that it is ``expect``,
    the campaign ``run --resume`` was given), ptxas, the ACFs in flight, the stored records; then restore the
    engine. A complete run is returned as such, without an engine. Errors in the campaign name the copy."""
    with naming_the_copy(run):
        return _prepare_resume(run, ptxas, expect=expect, seed=seed)


def _prepare_resume(run: RunDir, ptxas: Any, *, expect: Campaign | None, seed: int | None) -> Resumption:
    campaign = reopen_campaign(run)
    if expect is not None and expect.text != campaign.text:
        raise UserError(f"{run.path}: holds a run of another campaign (its campaign.yaml differs from "
                        f"{expect.path}); use another --out, or 'paretotune resume {run.path}' to continue it")
    if seed is not None and seed != campaign.spec.seed:
        raise UserError(f"{run.path}: the run was started with seed {campaign.spec.seed}, not {seed}")
    check_ptxas(run, campaign, ptxas)
    check_toolchain(campaign, ptxas)
    check_acf_files(campaign)
    check_search_space(campaign)
    point = resume_point(run)
    check_in_flight_acfs(run, point, ptxas, campaign.target.name)
    adapter = make_adapter(campaign, trial_import=True)
    columns = objective_columns(campaign, make_objectives(campaign))
    stored_columns = [c.column for c in run.objective_columns()]
    if [c.column for c in columns] != stored_columns:
        raise UserError(f"{run.path / META}: objective columns {stored_columns} differ from the campaign's "
                        f"{[c.column for c in columns]}")
    baseline = next((r for r in point.records if r.is_baseline), None)
    if baseline is not None and baseline.status != "ok":
        raise UserError(f"{campaign.path}: the baseline ({baseline_words(adapter, campaign.shapes)}, no ACF) failed: "
                        f"{baseline.error}")
    twins_missing = bool(point.records) and bool(missing_twins(run.results(), run.directions()))
    done = Resumption(campaign=campaign, point=point, engine=None, twins_missing=twins_missing)
    if done.complete or point.checkpoint is None:
        run.recover()  # every check passed: a torn last line goes, and every reader accepts the run again
        return done
    engine, point = restore_engine(campaign, adapter, len(columns), run, point)
    run.recover()
    return Resumption(campaign=campaign, point=point, engine=engine, twins_missing=twins_missing)
