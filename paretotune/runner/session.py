"""The run session the ``run`` and ``resume`` commands (and the API) share: claim the run directory, run or
continue the loop with a progress bar, print what it found.

``run`` starts with :func:`start_and_execute`, ``resume`` (and ``run --resume`` on a run that exists) with
:func:`resume_run`; both end in :func:`execute`. Everything checkable is checked before the first compile.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paretotune.errors import UserError
from paretotune.runner.progress_bar import BestSoFar, ProgressBar

if TYPE_CHECKING:
    from collections.abc import Sequence

    from paretotune.campaign.load import Campaign
    from paretotune.build.base import Evaluator
    from paretotune.objectives.base import Objective
    from paretotune.records import TrialRecord
    from paretotune.runner.resume import ResumePoint
    from paretotune.search.base import SearchEngine
    from paretotune.store.run_dir import RunDir
    from paretotune.toolchain.ptxas import Ptxas


def start_and_execute(campaign: Campaign, out: Path, ptxas: Ptxas, *, quiet: bool, as_json: bool = False,
                      spent_s: float | None = None) -> int:
    """Check everything checkable (a CUDA GPU when an objective needs one included), then claim ``out`` and
    run; a start that fails before the first checkpoint leaves nothing behind (``run`` and the API share it).
    ``spent_s``: seconds the caller spent on this run before the call (the CLI: its process's age), counted
    with the start-up against ``search.wall_clock_s``."""
    from paretotune.runner.start import check_before_import, prepare_run
    from paretotune.store.checkpoint import CHECKPOINT
    from paretotune.store.run_dir import RunDir

    run = RunDir(out)  # a path until claimed: nothing is written before every check has passed
    t0 = time.monotonic()
    if starts_workers_early(campaign, run):  # its imports beside this process's, from here on
        from paretotune.build.fork_server import start_early
        from paretotune.campaign.trial_import import kernel_mentions_helion

        start_early(helion=kernel_mentions_helion(campaign))
    objectives = check_before_import(campaign)
    t1 = time.monotonic()
    evaluator = start_workers_early(campaign, ptxas, run, objectives)
    t2 = time.monotonic()
    try:
        # before the folder exists; the early workers import the kernel once it passed its trial import
        meta, adapter = prepare_run(campaign, ptxas, campaign.spec.seed, objectives,
                                    after_trial=evaluator.kernel_checked if evaluator is not None else None)
        # where the seconds before the loop went (run.json): the process until here, the checks, the early worker
        # start, then prepare_run's own steps
        meta["start_s"] = {"process_to_run": spent_s, "checks": round(t1 - t0, 3), "workers_started": round(t2 - t1, 3),
                           **meta["start_s"]}
        for note in meta.get("kernel", {}).get("notes", []):
            print(note, file=sys.stderr if as_json else sys.stdout)  # --json keeps stdout one JSON document
        with run.claim() as made_here:  # the lock is held before anything is written
            try:
                run.write_new(campaign.text, meta)
                return execute(campaign, run, ptxas, quiet=quiet, as_json=as_json, evaluator=evaluator,
                               adapter=adapter, since=t0 - (spent_s or 0.0))
            except BaseException as exc:
                if not (run.path / CHECKPOINT).exists():  # nothing but (at most) a baseline: no half-made run
                    run.discard(made_here)
                    if isinstance(exc, UserError):
                        raise UserError(f"{exc} (nothing was kept: {run.path} "
                                        f"{'removed' if made_here else 'emptied'})") from None
                raise
    except BaseException:
        if evaluator is not None:
            evaluator.abandon()  # the loop closed it if it ran; else its workers are still starting
        raise


def start_workers_early(campaign: Campaign, ptxas: Ptxas, run: RunDir, objectives: Sequence[Objective]
                        ) -> Evaluator | None:
    """The evaluator, its worker processes already starting (imports, CUDA, compiler warm-up) while the
    kernel is imported and checked: each takes tens of seconds, and one after the other they delayed a
    campaign's first record by both (docs/results.md). Local backend and an
    empty or new ``--out`` only: a Ray session is not opened, and an existing folder not read, before the
    campaign has passed its checks."""
    if not starts_workers_early(campaign, run):
        return None
    from paretotune.runner import loop

    evaluator = loop.make_evaluator(campaign, ptxas, run, objectives)
    try:
        evaluator.start()
    except BaseException:
        evaluator.abandon()
        raise
    return evaluator


def starts_workers_early(campaign: Campaign, run: RunDir) -> bool:
    """Whether :func:`start_workers_early` starts them: the local backend, and ``--out`` empty or new (claiming an
    existing folder says what is there; nothing of it is read before that)."""
    if campaign.spec.execution.backend != "local":
        return False
    return not (run.path.exists() and (not run.path.is_dir() or any(run.path.iterdir())))


def process_age_s() -> float:
    """Seconds since this process imported paretotune (the CLI's first import): interpreter start-up aside, the
    command's age. Not the process's start time in /proc: a shell or wrapper that runs its setup and then
    replaces itself with the CLI (``sh -c "pip install ... && paretotune run ..."``) keeps its process, and its
    setup would count against the campaign's wall clock (a quickstart's installs, for one)."""
    from paretotune.version import IMPORTED_AT

    return round(time.monotonic() - IMPORTED_AT, 3)


def execute(campaign: Campaign, run: RunDir, ptxas: Ptxas, *, quiet: bool, engine: SearchEngine | None = None,
            point: ResumePoint | None = None, as_json: bool = False, evaluator: Evaluator | None = None,
            adapter: Any = None, since: float | None = None) -> int:
    """Run (or continue) the loop with a progress bar, then print the front. ``since`` (``time.monotonic()``):
    when this process began working on the run; its start-up counts against ``search.wall_clock_s``, which is
    the campaign's wall time as its user sees it (a 60 s budget ends about 60 s after the command started)."""
    from dataclasses import replace

    from paretotune.campaign.resolve import make_objectives
    from paretotune.measure.gpu_check import STATIC_NOTE, measures_on_gpu
    from paretotune.runner.loop import run_campaign
    from paretotune.runner.state import LoopState

    total = campaign.spec.search.budget + 1
    before = len(point.records) if point is not None else 0
    started = time.perf_counter()
    best = BestSoFar(run.objective_columns(), point.records if point is not None else [])
    state = point.state if point is not None else LoopState()
    if since is not None:
        state = replace(state, elapsed_s=state.elapsed_s + max(0.0, time.monotonic() - since))
    with ProgressBar(total, quiet, before, best) as advance:
        records = run_campaign(campaign, run, ptxas, on_record=advance, engine=engine, evaluator=evaluator,
                               adapter=adapter, state=state, in_flight=point.in_flight if point else None)
    stored = f" ({before + len(records)} stored in all)" if point is not None else ""
    _write_progress(run)
    if as_json:
        from paretotune.front import build_front, render_json

        print(render_json(build_front(run.path)))
        return 0
    print(f"\n{evaluated_line(records)} in {time.perf_counter() - started:.1f} s{stored}")
    if not measures_on_gpu(make_objectives(campaign)):
        print(STATIC_NOTE)
    timing = (run.meta().get("timing") or [{}])[-1]
    if timing.get("gpu_busy_fraction") is not None:
        build = timing.get("gpu_build_s_per_candidate")
        print(f"GPU busy {100 * timing['gpu_busy_fraction']:.0f} % of the {timing['search_wall_s']:.1f} s after the "
              f"baseline ({timing['schedule']} schedule"
              + (f", GPU-side build {build:.3f} s per candidate)" if build is not None else ")"))
    for shape, drift in (timing.get("baseline_drift") or {}).items():
        if drift["exceeds"]:
            print(f"drift: the paired baseline of {shape} spread {drift['spread_pct']:.1f} % over the run, above its "
                  f"noise floor of {drift['noise_floor_pct']:.1f} % (each ratio is to its own neighbouring baseline)")
    if line := search_errors_line(run):
        print(line)
    if timing.get("hung_candidates"):
        print(f"{timing['hung_candidates']} candidate(s) hung on the GPU: {timing['gpu_lost_s']:.1f} s lost, not "
              "counted as GPU busy")
    phases = timing.get("phases_s")
    if phases:
        before = sum(v for v in (run.meta().get("start_s") or {}).values() if v is not None)
        print("where the time went: " + (f"before the loop {before:.1f} s, " if before else "")
              + ", ".join(f"{k} {phases[k]:.1f} s" for k in ("setup", "baseline", "engine", "search", "twins",
                                                             "close")))
    print_front(run)
    return 0


def search_errors_line(run: RunDir) -> str | None:
    """What the summary says of the errors the engine went on past (``search_errors`` in run.json), if any."""
    errors = run.meta().get("search_errors") or []
    if not errors:
        return None
    return (f"the search engine met {len(errors)} error(s) inside itself and went on past them, its search the "
            f"poorer for it: {errors[-1]}")


def evaluated_line(records: Sequence[TrialRecord]) -> str:
    """How many candidates this call evaluated and how many failed, those the wall clock cut counted apart."""
    from paretotune.build.base import was_cut

    failed, cut = sum(r.status != "ok" for r in records), sum(map(was_cut, records))
    return (f"{len(records)} candidates evaluated ({failed} failed"
            + (f", {cut} of them cut at the wall clock)" if cut else ")"))


def done_line(records: Sequence[TrialRecord], budget: int) -> str:
    """A complete run's evaluations as the budget counts them: search candidates, not the baseline nor the no-ACF
    twins added after the search (counting them printed "61 of 60 evaluations")."""
    from paretotune.pareto.attribution import TWIN_OF

    twins = sum(TWIN_OF in r.extra for r in records)
    searched = sum(not r.is_baseline for r in records) - twins
    return (f"{searched} of {budget} search evaluations"
            + (", plus the baseline" if any(r.is_baseline for r in records) else "")
            + (f" and {twins} no-ACF twin{'s' if twins != 1 else ''}" if twins else ""))


def _write_progress(run: RunDir) -> None:
    """Hypervolume after each evaluation, for the report's progress chart (skipped without a baseline)."""
    from paretotune.pareto import NoBaselineError
    from paretotune.search.progress import hypervolume_progress

    try:
        hypervolume_progress(run.path)
    except NoBaselineError:
        pass


def print_front(run: RunDir) -> None:
    """The ranked front as ``paretotune front`` prints it, then where the run's files are."""
    from paretotune.front import build_front, render_text

    print(render_text(build_front(run.path)))
    print(f"\nrun directory: {run.path}\n  results: {run.path / 'results.jsonl'}\n  ACFs:    {run.path / 'acf'}")


def resume_run(path: Path, *, quiet: bool, expect: Campaign | None = None, seed: int | None = None,
               spent_s: float | None = None) -> int:
    """Continue the run in ``path``; everything is checked before any compile (see
    :func:`paretotune.runner.resume.prepare_resume`). ``spent_s`` as for :func:`start_and_execute`: this
    process's start-up adds to the run's wall time."""
    from paretotune.campaign.resolve import make_objectives
    from paretotune.measure.gpu_check import require_gpu_for
    from paretotune.runner.resume import naming_the_copy, open_run, prepare_resume
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    entered = time.monotonic()
    run = open_run(path)
    ptxas = find_ptxas()
    export_for_triton(ptxas)
    with run.lock():
        plan = prepare_resume(run, ptxas, expect=expect, seed=seed)
        if plan.complete:
            print(f"{run.path}: complete ({done_line(plan.point.records, plan.campaign.spec.search.budget)}); "
                  "nothing to resume")
            print_front(run)
            return 0
        with naming_the_copy(run):
            require_gpu_for(make_objectives(plan.campaign), f"{plan.campaign.path}: objectives",
                            backend=plan.campaign.spec.execution.backend)
        return execute(plan.campaign, run, ptxas, quiet=quiet, engine=plan.engine, point=plan.point,
                       since=entered - (spent_s or 0.0))
