"""Seconds from ``paretotune run`` to its first record (the baseline's) on disk, one paretotune source tree against
another, interleaved run by run, each with an empty Triton cache. The campaign's kernel import is what a campaign
process waits on before its first build; what else it does meanwhile (the build workers' start) decides how much
of a short budget goes before the first candidate.

    python benchmarks/bench_first_record.py --tree before=/tmp/old --tree after=. --runs 3 \\
        --out benchmarks/results/first_record_devbox.json

Default campaign: benchmarks/inputs/slow_import/ (a vector add whose module takes ``SLOW_IMPORT_S`` = 4 s to
import; static objectives, no GPU). Per run: the seconds to the first record, and ``start_s`` and
``kernel_import_s`` from run.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import append_result, comparison_record, interleaved, run_meta, tree_arguments, trees_of

CAMPAIGN = Path(__file__).resolve().parent / "inputs" / "slow_import" / "slow_import.yaml"


def one_run(tree: Path, campaign: Path, work: Path, timeout_s: float = 300.0) -> dict[str, Any]:
    """One CLI run with ``tree``'s paretotune: when its results file first holds a record, and how it ended."""
    out = work / "run"
    env = {**os.environ, "PYTHONPATH": str(tree), "TRITON_CACHE_DIR": str(work / "triton-cache")}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "paretotune.cli", "run", str(campaign), "--out", str(out),
                             "--quiet"], cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    first = None
    results = out / "results.jsonl"
    while proc.poll() is None and time.monotonic() - start < timeout_s:
        if first is None and results.exists() and results.stat().st_size:
            first = time.monotonic() - start
        time.sleep(0.02)
    if proc.poll() is None:
        proc.kill()
    err = proc.communicate()[1]
    if first is None:
        return {"exit_code": proc.returncode, "error": err[-500:]}
    meta = run_meta(out)
    return {"exit_code": proc.returncode, "first_record_s": round(first, 2), "start_s": meta.get("start_s"),
            "kernel_import_s": meta.get("kernel_import_s"), "wall_s": round(time.monotonic() - start, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--campaign", type=Path, default=CAMPAIGN, help="a static campaign file")
    tree_arguments(parser, runs=3)
    args = parser.parse_args()
    trees = trees_of(args.tree)
    campaign = args.campaign.resolve()
    runs, loads = interleaved(trees, args.runs, lambda tree, work: one_run(tree, campaign, work))
    firsts = {label: sorted(r["first_record_s"] for r in rs if "first_record_s" in r) for label, rs in runs.items()}
    result = {
        **comparison_record("seconds from `paretotune run` to the first record on disk, per tree, interleaved; "
                            "empty Triton cache", trees, loads),
        "campaign": campaign.read_text(), "slow_import_s": os.environ.get("SLOW_IMPORT_S", "4"), "runs": runs,
        "median_first_record_s": {label: f[len(f) // 2] if f else None for label, f in firsts.items()},
    }
    print(json.dumps(result["median_first_record_s"]))
    append_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
