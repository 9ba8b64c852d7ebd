"""Seconds until a CPU pool worker returns its first result: spawned (imports torch, Triton and Helion itself) vs
forked from the fork server (torch, Triton and Helion preloaded, as a Helion campaign asks) vs forked from a fork
server without Helion (torch and Triton only: what a GPU host's workers started from where Helion's import is not
fork-safe, torch's NVML check off), for the first pool and for a pool restarted after a kill (what a ptxas hang
costs). Static build of the bundled Helion softmax, no GPU needed; on a GPU host the same modes compare the same.

Usage: python benchmarks/bench_pool_start.py --out pool_start.json [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

MODES = ("spawn", "forkserver", "forkserver-without-helion")
CAMPAIGN = """
    name: pool-start
    kernel: {source: "paretotune.kernels.bundled.helion_softmax:helion_softmax"}
    shapes: [{name: s, M: 4096, N: 8192, dtype: float16}]
    objectives: [registers]
"""


def one(mode: str, folder: Path) -> dict[str, float]:
    """In this (fresh) process: first result of a new pool, then of the same pool after a kill."""
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter
    from paretotune.build import pool
    from paretotune.build.static_job import WorkerContext, evaluate_static, init_worker
    from paretotune.records import Candidate
    from paretotune.toolchain.ptxas import find_ptxas

    from paretotune.build import fork_server

    if mode == "spawn":
        pool.worker_context = lambda: multiprocessing.get_context("spawn")
    else:
        if mode == "forkserver-without-helion":
            with_helion = fork_server.preload_modules
            fork_server.preload_modules = lambda: [m for m in with_helion() if m != fork_server.HELION_PRELOAD]
        fork_server.worker_context(helion=True)  # what a Helion campaign's evaluator asks (runner/evaluator.py)
    cfg = folder / "campaign.yaml"
    cfg.write_text(textwrap.dedent(CAMPAIGN))
    campaign, ptxas = load_campaign(cfg), find_ptxas()
    adapter = make_adapter(campaign)  # the campaign process has torch and Triton imported, as in a real run
    ctx = WorkerContext(campaign_path=str(cfg), campaign_text=campaign.text, ptxas_path=str(ptxas.path),
                        ptxas_version=ptxas.version, acf_dir=str(folder / "acf"), precompile=True)
    workers = pool.WorkerPool(evaluate_static, init_worker, (ctx,), 1, 300)
    cand = Candidate(candidate_id=1, generation=0, config=adapter.default_config(campaign.shapes[0]), acf=None)
    out = {}
    try:
        for phase in ("first_pool_s", "after_restart_s"):
            start = time.perf_counter()
            (rec,) = workers.run([cand])
            assert rec.status == "ok", rec.error
            out[phase] = time.perf_counter() - start
            workers._kill()  # what the pool does after a timeout; the next run starts a new worker
    finally:
        workers.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", choices=MODES)
    args = parser.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(one(args.child, Path(tmp))))
        return
    import torch

    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter
    from paretotune.build.fork_server import preload_modules, worker_context

    with tempfile.TemporaryDirectory() as tmp:  # what this machine's campaign process would preload
        (Path(tmp) / "c.yaml").write_text(textwrap.dedent(CAMPAIGN))
        make_adapter(load_campaign(Path(tmp) / "c.yaml"))
        worker_context(helion=True)
        preload = {"torch_cuda_build": torch.version.cuda, "modules": preload_modules()}
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for done in range(1, args.repeats + 1):
        for mode, results in runs.items():
            proc = subprocess.run([sys.executable, __file__, "--child", mode], check=True, capture_output=True,
                                  text=True, env={**os.environ, "TRITON_CACHE_DIR": tempfile.mkdtemp()})
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        text = json.dumps(report(runs, preload, done, args.repeats), indent=1)
        if args.out:  # after every repeat: a step cut by its timeout keeps the repeats it finished
            args.out.write_text(text)
    print(text)


def report(runs: dict[str, list[dict[str, float]]], preload: dict[str, Any], done: int, asked: int) -> dict[str, Any]:
    """The record so far: every run, the medians, and how many of the asked repeats it holds."""
    return {"command": " ".join(["python", "benchmarks/bench_pool_start.py", *sys.argv[1:]]),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], check=False, capture_output=True,
                                     text=True, cwd=ROOT).stdout.strip(),
            "repeats_done": done, "repeats_asked": asked,
            "runs": runs,
            "median_s": {m: {k: round(statistics.median(r[k] for r in rs), 2) for k in rs[0]}
                         for m, rs in runs.items()},
            "notes": "each run a fresh process and an empty Triton cache; the time includes the worker's warm-up "
                     "compile and the candidate's own build. forkserver: the server preloads torch, Triton and "
                     "Helion where that is fork-safe (a CPU build of torch, or torch's NVML check on); "
                     "forkserver-without-helion: torch and Triton only", "preload": preload}

if __name__ == "__main__":
    main()
