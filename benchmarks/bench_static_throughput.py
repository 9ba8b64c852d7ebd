"""Candidates a campaign stores in its wall clock, one paretotune source tree against another, interleaved run by
run, each run with an empty Triton cache (a cached build takes no time, so a second run of the same configs
would measure the cache, not the builds).

    python benchmarks/bench_static_throughput.py --campaign benchmarks/inputs/layer_norm_static.yaml \\
        --tree before=/tmp/old --tree after=. --runs 2 --out benchmarks/results/static_throughput_devbox.json

Each tree is put first on ``PYTHONPATH`` and runs ``python -m paretotune.cli run CAMPAIGN``; per run, the
candidates stored, how many built, why the others failed, and the search's seconds are recorded with the
machine, its load and the date. A CPU-only static campaign needs no GPU: this runs on any machine.
"""
from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from common import append_result, comparison_record, interleaved, run_meta, stored_records, tree_arguments, trees_of


def one_run(tree: Path, campaign: Path, work: Path) -> dict[str, Any]:
    """One CLI run of ``campaign`` with ``tree``'s paretotune and a Triton cache of its own."""
    out, cache = work / "run", work / "triton-cache"
    env = {**os.environ, "PYTHONPATH": str(tree), "TRITON_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-m", "paretotune.cli", "run", str(campaign), "--out", str(out),
                           "--quiet"], cwd=tree, env=env, capture_output=True, text=True)
    if not (out / "results.jsonl").exists():
        return {"exit_code": done.returncode, "error": done.stderr[-500:]}
    records = [r for r in stored_records(out) if not r.is_baseline]
    timing = (run_meta(out).get("timing") or [{}])[-1]
    return {"exit_code": done.returncode, "candidates": len(records),
            "built": sum(r.status == "ok" for r in records),
            "failures": dict(collections.Counter(r.error[:40] for r in records if r.status != "ok")),
            "search_s": (timing.get("phases_s") or {}).get("search")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--campaign", type=Path, required=True, help="a static campaign file")
    tree_arguments(parser, runs=2)
    args = parser.parse_args()
    trees = trees_of(args.tree)
    campaign = args.campaign.resolve()
    runs, loads = interleaved(trees, args.runs, lambda tree, work: one_run(tree, campaign, work))
    result = {
        **comparison_record("candidates stored and built in one run of the campaign, per tree, interleaved; empty "
                            "Triton cache", trees, loads),
        "campaign": campaign.read_text(), "runs": runs,
    }
    append_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
