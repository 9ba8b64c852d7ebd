"""Re-measure the front (or chosen candidates) against the baseline and judge each with statistics."""
from __future__ import annotations

import argparse
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--candidates", type=lambda s: [int(x) for x in s.split(",")],
                        help="comma-separated candidate ids (default: the ranked front, best first)")
    parser.add_argument("--top", type=int, default=6, help="at most this many front candidates (default 6)")
    parser.add_argument("--rounds", type=int, default=30, help="interleaved rounds (samples per arm)")
    parser.add_argument("--rep-ms", type=float, default=50.0, help="do_bench rep per sample (ms)")
    parser.add_argument("--warmup-ms", type=float, default=10.0)
    parser.add_argument("--alpha", type=float, default=0.01)
    parser.add_argument("--min-effect", type=float, default=0.5)


def main(args: argparse.Namespace) -> int:
    from paretotune.execution.validation import run_validation

    table = run_validation(args.run_dir, candidates=args.candidates, top=args.top, rounds=args.rounds,
                           rep_ms=args.rep_ms, warmup_ms=args.warmup_ms, alpha=args.alpha,
                           min_effect=args.min_effect)
    cols = ["shape", "candidate_id", "speedup", "ci_low", "ci_high", "cohens_d", "p_holm", "significant", "failed"]
    print(table[[c for c in cols if c in table.columns]].to_string(index=False))
    print(f"\nverdicts: {args.run_dir / 'validation.csv'}; artifacts: {args.run_dir / 'artifacts'}")
    return 0
