"""Run a campaign: search, measure, store, and print the Pareto front."""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from paretotune.campaign.load import load_campaign
from paretotune.records import TrialRecord


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", type=Path, help="campaign YAML file")
    parser.add_argument("--out", type=Path, help="run directory (default: runs/<campaign>-<time>)")
    parser.add_argument("--seed", type=int, help="seed for inputs and seeded engines (overrides the campaign)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def main(args: argparse.Namespace) -> int:
    from paretotune.campaign.loop import run_campaign, start_run
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    campaign = load_campaign(args.config)
    if args.seed is not None:
        campaign = type(campaign)(spec=campaign.spec.model_copy(update={"seed": args.seed}), path=campaign.path,
                                  text=campaign.text, shapes=campaign.shapes, target=campaign.target)
    ptxas = find_ptxas()
    export_for_triton(ptxas)
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    out = args.out or Path("runs") / f"{campaign.spec.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    run = start_run(campaign, out, ptxas, campaign.spec.seed)
    total = campaign.spec.search.budget + 1
    started = time.perf_counter()
    with _progress(total, args.quiet) as advance:
        records = run_campaign(campaign, run, ptxas, on_record=advance)
    failed = sum(r.status != "ok" for r in records)
    print(f"\n{len(records)} candidates evaluated ({failed} failed) in {time.perf_counter() - started:.1f} s")
    from paretotune.commands.front import print_front

    print_front(run.path)
    print(f"\nrun directory: {run.path}\n  results: {run.path / 'results.jsonl'}\n  ACFs:    {run.path / 'acf'}")
    return 0


class _progress:
    """A rich progress bar advanced once per stored record (plain counter when rich is absent or --quiet)."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total, self.quiet, self._bar = total, quiet, None

    def __enter__(self):  # noqa: ANN204
        if not self.quiet:
            try:
                from rich.progress import Progress

                self._bar = Progress(transient=False)
                self._bar.start()
                self._task = self._bar.add_task("evaluating", total=self.total)
            except ImportError:
                self._bar = None
        return self.advance

    def advance(self, record: TrialRecord) -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=f"evaluating (last: #{record.candidate_id} "
                             f"{record.status})")

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
