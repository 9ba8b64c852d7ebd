"""Run a campaign: search, measure, store, and print the Pareto front."""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paretotune.campaign.load import load_campaign
from paretotune.errors import UserError
from paretotune.records import TrialRecord

if TYPE_CHECKING:
    from paretotune.campaign.load import Campaign
    from paretotune.campaign.resume import ResumePoint
    from paretotune.search.base import SearchEngine
    from paretotune.store.run_dir import RunDir
    from paretotune.toolchain.ptxas import Ptxas


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", type=Path, help="campaign YAML file")
    parser.add_argument("--out", type=Path, help="run directory (default: runs/<campaign>-<time>)")
    parser.add_argument("--seed", type=int, help="seed for inputs and seeded engines (overrides the campaign)")
    parser.add_argument("--resume", action="store_true",
                        help="if --out already holds a run of this campaign, continue it (else start it)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true",
                        help="no progress bar; print the front as JSON (as 'paretotune front --json') at the end")


def main(args: argparse.Namespace) -> int:
    from paretotune.campaign.load import check_toolchain
    from paretotune.store.run_dir import META
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    campaign = load_campaign(args.config)
    if args.seed is not None:
        if not 0 <= args.seed < 2**32:
            raise UserError(f"--seed: {args.seed} is outside [0, 2^32)")
        campaign = campaign.with_seed(args.seed)
    if args.resume:
        if args.out is None:
            raise UserError("--resume needs --out RUN_DIR (the run to continue)")
        if (args.out / META).is_file():
            from paretotune.commands.resume import resume_run

            return resume_run(args.out, quiet=args.quiet or args.json, expect=campaign, seed=args.seed)
    ptxas = find_ptxas()
    check_toolchain(campaign, ptxas)
    export_for_triton(ptxas)
    out = args.out or Path("runs") / f"{campaign.spec.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    return start_and_execute(campaign, out, ptxas, quiet=args.quiet or args.json, as_json=args.json)


def start_and_execute(campaign: Campaign, out: Path, ptxas: Ptxas, *, quiet: bool, as_json: bool = False) -> int:
    """Check everything checkable (a CUDA GPU when an objective needs one included), then claim ``out`` and
    run; a start that fails before the first checkpoint leaves nothing behind (``run`` and the API share it)."""
    from paretotune.campaign.loop import prepare_run
    from paretotune.store.checkpoint import CHECKPOINT
    from paretotune.store.run_dir import RunDir

    meta = prepare_run(campaign, ptxas, campaign.spec.seed)  # everything checkable, before the folder exists
    for note in meta.get("kernel", {}).get("notes", []):
        print(note, file=sys.stderr if as_json else sys.stdout)  # --json keeps stdout one JSON document
    run = RunDir(out)
    with run.claim() as made_here:  # the lock is held before anything is written
        try:
            run.write_new(campaign.text, meta)
            return execute(campaign, run, ptxas, quiet=quiet, as_json=as_json)
        except BaseException as exc:
            if not (run.path / CHECKPOINT).exists():  # nothing but (at most) a baseline: no half-made run
                run.discard(made_here)
                if isinstance(exc, UserError):
                    raise UserError(f"{exc} (nothing was kept: {run.path} "
                                    f"{'removed' if made_here else 'emptied'})") from None
            raise


def execute(campaign: Campaign, run: RunDir, ptxas: Ptxas, *, quiet: bool, engine: SearchEngine | None = None,
            point: ResumePoint | None = None, as_json: bool = False) -> int:
    """Run (or continue) the loop with a progress bar, then print the front."""
    from paretotune.campaign.loop import run_campaign

    total = campaign.spec.search.budget + 1
    before = len(point.records) if point is not None else 0
    started = time.perf_counter()
    best = BestSoFar(run.objective_columns(), point.records if point is not None else [])
    with _progress(total, quiet, before, best) as advance:
        records = run_campaign(campaign, run, ptxas, on_record=advance, engine=engine,
                               state=point.state if point else None, in_flight=point.in_flight if point else None)
    failed = sum(r.status != "ok" for r in records)
    stored = f" ({before + len(records)} stored in all)" if point is not None else ""
    _write_progress(run)
    if as_json:
        from paretotune.front import build_front, render_json

        print(render_json(build_front(run.path)))
        return 0
    print(f"\n{len(records)} candidates evaluated ({failed} failed) in {time.perf_counter() - started:.1f} s{stored}")
    timing = (run.meta().get("timing") or [{}])[-1]
    if timing.get("gpu_busy_fraction") is not None:
        build = timing.get("gpu_build_s_per_candidate")
        print(f"GPU busy {100 * timing['gpu_busy_fraction']:.0f} % of the {timing['search_wall_s']:.1f} s after the "
              f"baseline ({timing['schedule']} schedule"
              + (f", GPU-side build {build:.3f} s per candidate)" if build is not None else ")"))
    print_front(run)
    return 0


def _write_progress(run: RunDir) -> None:
    """Hypervolume after each evaluation, for the report's progress chart (skipped without a baseline)."""
    from paretotune.pareto import NoBaselineError
    from paretotune.search.progress import hypervolume_progress

    try:
        hypervolume_progress(run.path)
    except NoBaselineError:
        pass


def print_front(run: RunDir) -> None:
    from paretotune.front import build_front, render_text

    print(render_text(build_front(run.path)))
    print(f"\nrun directory: {run.path}\n  results: {run.path / 'results.jsonl'}\n  ACFs:    {run.path / 'acf'}")


class BestSoFar:
    """The best speedup so far per time column (runtime@shape), or for a static campaign the best ratio to the
    baseline of the first objective per shape, for the progress line (one reading: see pareto/convention)."""

    def __init__(self, columns: list[Any], records: list[TrialRecord]) -> None:
        from paretotune.pareto.convention import is_time

        timed = [c for c in columns if is_time(c)]
        first = columns[0].objective if columns else ""
        self.columns = timed or [c for c in columns if c.objective == first]
        self.speedups = bool(timed)
        self.baseline: dict[str, float] = {}
        self.best: dict[str, float] = {}
        for record in records:
            self.add(record)

    def add(self, record: TrialRecord) -> None:
        """Take one stored record into account (the first successful baseline is the reference)."""
        from paretotune.pareto.convention import versus_baseline

        if record.status != "ok":
            return
        if record.is_baseline:
            self.baseline = self.baseline or dict(record.values)
            return
        for c in self.columns:
            if c.column not in record.values or c.column not in self.baseline:
                continue
            shown = versus_baseline(float(record.values[c.column]), self.baseline[c.column], c)
            held = self.best.get(c.column)
            # a speedup or a "max" ratio is better larger; a "min" ratio (registers) smaller
            larger_better = self.speedups or c.direction == "max"
            if shown == shown and (held is None or (shown > held if larger_better else shown < held)):
                self.best[c.column] = shown

    def text(self) -> str:
        if not self.best:
            return ""
        cells = ", ".join(f"{col} {value:.3f}x" for col, value in self.best.items())
        return f" best {'speedup' if self.speedups else 'x baseline'}: {cells}"


class _progress:
    """A rich progress bar advanced once per stored record (plain counter when rich is absent or --quiet)."""

    def __init__(self, total: int, quiet: bool, completed: int = 0, best: BestSoFar | None = None) -> None:
        self.total, self.quiet, self.completed = total, quiet, completed
        self.best = best
        self._bar: Any = None

    def __enter__(self) -> Callable[[TrialRecord], None]:
        if not self.quiet:
            try:
                from rich.progress import Progress

                self._bar = Progress(transient=False)
                self._bar.start()
                self._task = self._bar.add_task("evaluating", total=self.total, completed=self.completed)
            except ImportError:
                self._bar = None
        return self.advance

    def advance(self, record: TrialRecord) -> None:
        if self.best is not None:
            self.best.add(record)
        if self._bar is not None:
            best = self.best.text() if self.best is not None else ""
            self._bar.update(self._task, advance=1, description=f"evaluating (last: #{record.candidate_id} "
                             f"{record.status}){best}")

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
