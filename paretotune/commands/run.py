"""Run a campaign: search, measure, store, and print the Pareto front."""
from __future__ import annotations

import argparse
from pathlib import Path

from paretotune.errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", type=Path, help="campaign YAML file")
    parser.add_argument("--out", type=Path, help="run directory (default: runs/<campaign name>-<time> in the working "
                                                  "directory, the name sanitised)")
    parser.add_argument("--seed", type=int, help="seed for the inputs and the search engine (overrides the campaign's "
                        "seed): a static campaign gives the same records for the same seed (README: --seed)")
    parser.add_argument("--resume", action="store_true",
                        help="if --out already holds a run of this campaign, continue it (else start it)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true",
                        help="no progress bar; print the front as JSON (as 'paretotune front --json') at the end")


def main(args: argparse.Namespace) -> int:
    from paretotune.processes import reaping_children

    with reaping_children():  # no process the run starts outlives the command, however it ends
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.user_code import check_findable

    campaign = load_campaign(args.config)  # a bad campaign file is refused before torch, Triton or pandas load
    if args.seed is not None:
        if not 0 <= args.seed < 2**32:
            raise UserError(f"--seed: {args.seed} is outside [0, 2^32)")
        campaign = campaign.with_seed(args.seed)
    check_findable(campaign)

    from paretotune.campaign.acf_check import check_toolchain
    from paretotune.runner.session import process_age_s, resume_run, start_and_execute
    from paretotune.runner.start import default_run_dir
    from paretotune.store.run_dir import META
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    if args.resume:
        if args.out is None:
            raise UserError("--resume needs --out RUN_DIR (the run to continue)")
        if (args.out / META).is_file():
            return resume_run(args.out, quiet=args.quiet or args.json, expect=campaign, seed=args.seed,
                              spent_s=process_age_s())
    ptxas = find_ptxas()
    check_toolchain(campaign, ptxas)
    export_for_triton(ptxas)
    out = args.out or default_run_dir(campaign)
    return start_and_execute(campaign, out, ptxas, quiet=args.quiet or args.json, as_json=args.json,
                             spent_s=process_age_s())
