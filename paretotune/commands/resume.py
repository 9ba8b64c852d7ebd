"""Continue a run after a crash or kill, with no completed evaluation lost or repeated."""
from __future__ import annotations

import argparse
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory written by 'paretotune run'")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def main(args: argparse.Namespace) -> int:
    from paretotune.processes import reaping_children
    from paretotune.runner.session import process_age_s, resume_run

    with reaping_children():  # no process the run starts outlives the command, however it ends
        return resume_run(args.run_dir, quiet=args.quiet, spent_s=process_age_s())
