"""How long a campaign's main thread waits in the GPU worker's prestart, one paretotune source tree against another.

The GPU worker and its spares come from the build pool's fork server, and a fork server starts a process only once
it has imported its preloads (torch and Triton: seconds on a GPU host). Here the preloads include a module that
sleeps ``--preload-s`` seconds, and a fresh interpreter per run times ``GpuWorker.prestart()`` (what the campaign's
main thread waits for before it imports the kernel) and the seconds until the processes were spawned. No GPU is
needed: only the start is timed, the workers are stopped before they are used.

    python benchmarks/bench_gpu_prestart.py --tree before=/tmp/old --tree after=. --runs 3 \\
        --out benchmarks/results/gpu_prestart_devbox.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from common import append_result, comparison_record, interleaved, tree_arguments, trees_of

CAMPAIGN = Path(__file__).resolve().parents[1] / "configs" / "quickstart.yaml"

RUN = """
import json, os, sys, time
try:
    from paretotune.build import fork_server as preloads
except ImportError:  # a tree from before the fork server had its own module
    from paretotune.build import pool as preloads
preloads.PRELOAD = (*preloads.PRELOAD, "slow_preload")
from paretotune.campaign.load import load_campaign
from paretotune.measure.gpu import GpuWorker
from paretotune.runner.evaluator import measure_request
from paretotune.toolchain.ptxas import find_ptxas
gpu = GpuWorker(measure_request(load_campaign({campaign!r})), find_ptxas(), timeout_s=60, spares=0)
t0 = time.monotonic()
gpu.prestart()
t1 = time.monotonic()
getattr(gpu, "prestarted", lambda: None)()  # a tree whose prestart waits has nothing to wait for here
t2 = time.monotonic()
gpu.stop()
print(json.dumps({{"prestart_s": round(t1 - t0, 3), "spawned_s": round(t2 - t0, 3)}}))
"""


def one_run(tree: Path, work: Path, preload_s: float) -> dict[str, Any]:
    """One fresh interpreter with ``tree``'s paretotune and a fork server whose preloads take ``preload_s``."""
    (work / "slow_preload.py").write_text(f"import time\ntime.sleep({preload_s})\n")
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{work}"}
    done = subprocess.run([sys.executable, "-c", RUN.format(campaign=str(CAMPAIGN))], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    if done.returncode:
        return {"exit_code": done.returncode, "error": done.stderr[-500:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preload-s", type=float, default=3.0, help="seconds the fork server's extra preload sleeps")
    tree_arguments(parser, runs=3)
    args = parser.parse_args()
    trees = trees_of(args.tree)
    runs, loads = interleaved(trees, args.runs, lambda tree, work: one_run(tree, work, args.preload_s))
    medians = {}
    for label, rs in runs.items():
        waits = sorted(r["prestart_s"] for r in rs if "prestart_s" in r)
        medians[label] = waits[len(waits) // 2] if waits else None
    result = {**comparison_record("seconds GpuWorker.prestart() holds the caller while the fork server imports its "
                                  "preloads, per tree, interleaved; fresh interpreter per run", trees, loads),
              "preload_s": args.preload_s, "runs": runs, "median_prestart_s": medians}
    print(json.dumps(medians))
    append_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
