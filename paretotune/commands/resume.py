"""Continue a run after a crash or kill, with no completed evaluation lost or repeated."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from paretotune.campaign.load import Campaign


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory written by 'paretotune run'")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def main(args: argparse.Namespace) -> int:
    return resume_run(args.run_dir, quiet=args.quiet)


def resume_run(path: Path, *, quiet: bool, expect: Campaign | None = None, seed: int | None = None) -> int:
    """Everything is checked before any compile (see :func:`paretotune.campaign.resume.prepare_resume`)."""
    from paretotune.campaign.resume import open_run, prepare_resume
    from paretotune.commands.run import execute, print_front
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    run = open_run(path)
    ptxas = find_ptxas()
    export_for_triton(ptxas)
    with run.lock():
        plan = prepare_resume(run, ptxas, expect=expect, seed=seed)
        if plan.complete:
            print(f"{run.path}: complete ({plan.point.state.evaluated} of {plan.campaign.spec.search.budget} "
                  "evaluations); nothing to resume")
            print_front(run)
            return 0
        from paretotune.campaign.load import make_objectives
        from paretotune.execution.gpu_check import require_gpu_for

        require_gpu_for(make_objectives(plan.campaign), f"{plan.campaign.path}: objectives",
                        backend=plan.campaign.spec.execution.backend)
        return execute(plan.campaign, run, ptxas, quiet=quiet, engine=plan.engine, point=plan.point)
