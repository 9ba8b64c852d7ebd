"""Per-candidate wall time: a paretotune runtime campaign vs Helion's autotuner over the same ACF files.

1. paretotune: a runtime-only campaign on the bundled Helion softmax (joint config × ACF search with
   CompileIQ); the steady-state rate is timed from the first search record to the last.
2. Helion 1.5: ``autotune_search_acf=[the ACFs paretotune generated]``, effort ``quick``, benchmarking in
   process (the default subprocess mode found no working config on the H200 image, see
   ../shared/reference/helion-triton.md); configs tested are counted from Helion's autotune CSV log.
Run on a GPU: ``python benchmarks/bench_vs_helion.py --out results.json``.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

from common import cpu_model, cpu_topology, load_average

ROOT = Path(__file__).resolve().parents[1]


def breakdown(records: list) -> dict:
    """Mean seconds per search candidate in each stage (CPU pool: PTX, ptxas, precompile; GPU worker)."""

    search = [r for r in records if not r.is_baseline and r.status == "ok"]
    names = sorted({k for r in search for k in r.stages})
    out = {"cpu_pool_total_s": [r.compile_s for r in search], "gpu_worker_total_s": [r.measure_s for r in search],
           **{name: [r.stages.get(name, 0.0) for r in search] for name in names},
           "baseline_age_s": [v["baseline_age_s"] for r in search for v in r.extra.values()
                              if isinstance(v, dict) and "baseline_age_s" in v]}
    return {k: round(statistics.fmean(v), 4) if v else None for k, v in out.items()}


def paretotune_side(workdir: Path, m: int, n: int, generations: int, pool: int, workers: int,
                    baseline_interval_s: float, barrier: bool = False) -> dict:
    from paretotune.campaign.load import load_campaign
    from paretotune.runner.loop import run_campaign
    from paretotune.runner.start import start_run
    from paretotune.toolchain.ptxas import find_ptxas

    workdir = workdir / f"interval{baseline_interval_s:g}"
    workdir.mkdir()
    cfg = workdir / "campaign.yaml"
    cfg.write_text(textwrap.dedent(f"""
        name: bench-helion-softmax
        kernel: {{source: "paretotune.kernels.bundled.helion_softmax:helion_softmax"}}
        shapes: [{{name: s, M: {m}, N: {n}, dtype: float16}}]
        objectives: [runtime]
        search: {{engine: compileiq, generations: {generations}, pool_size: {pool}, barrier: {str(barrier).lower()}}}
        evaluation: {{workers: {workers}, warmup_ms: 10, rep_ms: 40, baseline_interval_s: {baseline_interval_s}}}
    """))
    ptxas = find_ptxas()
    campaign = load_campaign(cfg)
    run = start_run(campaign, workdir / "run", ptxas, 0)
    stamps: list[float] = []
    start = time.perf_counter()
    records = run_campaign(campaign, run, ptxas, on_record=lambda r: stamps.append(time.perf_counter()))
    total = time.perf_counter() - start
    search = len(records) - 1
    steady = (stamps[-1] - stamps[1]) / max(1, search - 1) if search > 1 else float("nan")
    timeline: dict[int, list[float]] = {}
    for rec, stamp in zip(records, stamps):
        timeline.setdefault(rec.generation, []).append(stamp - start)
    ok = [r for r in records if r.status == "ok"]
    errors = Counter(r.error.split(":")[0][:80] for r in records if r.status != "ok")
    base = next(r for r in records if r.is_baseline)
    best = min((r for r in ok if not r.is_baseline), key=lambda r: r.values["runtime"], default=None)
    return {"candidates": len(records), "failed": len(records) - len(ok), "wall_s": total,
            "s_per_candidate_total": total / len(records), "s_per_candidate_steady": steady,
            "first_search_record_s": stamps[1] - start if search else None,
            "close_s": total - (stamps[-1] - start),  # from the last record until run_campaign returned
            "baseline_ms": base.values.get("runtime"), "best_ms": best.values["runtime"] if best else None,
            "best_config": best.config if best else None, "acf_dir": str(run.path / "acf"),
            "baseline_interval_s": baseline_interval_s, "stages_per_candidate": breakdown(records),
            "generations_s": {g: {"records": len(t), "first": round(min(t), 2), "last": round(max(t), 2)}
                              for g, t in sorted(timeline.items())},
            "errors": dict(errors),
            # schedule, GPU-busy fraction after the baseline, GPU-side build s per candidate (issue 19)
            "timing": (run.meta().get("timing") or [None])[-1],
            "TRITON_DEFAULT_FP_FUSION_in_caller": os.environ.get("TRITON_DEFAULT_FP_FUSION")}


def helion_side(workdir: Path, acfs: list[str], m: int, n: int, budget_s: int) -> dict:
    import helion
    import torch

    from paretotune.kernels.bundled.helion_softmax import softmax

    log = workdir / "helion_autotune"
    kern = helion.kernel(softmax.fn, static_shapes=True, autotune_search_acf=acfs, autotune_effort="quick",
                         autotune_benchmark_subprocess=False, autotune_precompile=None, autotune_log=str(log),
                         autotune_budget_seconds=budget_s)
    x = torch.randn(m, n, dtype=torch.float16, device="cuda")
    start = time.perf_counter()
    error = None
    try:
        kern(x)
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - recorded
        error = f"{type(exc).__name__}: {exc}"[:500]
    wall = time.perf_counter() - start
    rows = []
    if log.with_suffix(".csv").exists():
        with open(log.with_suffix(".csv")) as fh:
            rows = list(csv.DictReader(fh))
    return {"wall_s": wall, "error": error, "acf_files": len(acfs), **count_configs(rows, wall)}


def count_configs(rows: list[dict], wall_s: float) -> dict:
    """Configs Helion tested, from its autotune CSV log: one row when a config starts, one when it ends.

    Only the end rows (status other than ``started``) count; the steady rate spans their timestamps.
    """
    done = [r for r in rows if r.get("status") != "started"]
    stamps = sorted(float(r["timestamp_s"]) for r in done if r.get("timestamp_s"))
    compile_s = [float(r["compile_time_s"]) for r in done if r.get("compile_time_s") not in (None, "")]
    return {"configs_tested": len(done), "csv_rows": len(rows),
            "compile_time_s_median": statistics.median(compile_s) if compile_s else None,
            "s_per_config": wall_s / len(done) if done else None,
            "s_per_config_steady": (stamps[-1] - stamps[0]) / (len(stamps) - 1) if len(stamps) > 1 else None,
            "statuses": dict(Counter(r.get("status") for r in rows)),
            "csv_columns": list(rows[0]) if rows else []}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--pool", type=int, default=10)
    parser.add_argument("--acfs", type=int, default=8)
    parser.add_argument("--helion-budget-s", type=int, default=90)
    parser.add_argument("--workers", type=int, default=8, help="paretotune's CPU build workers")
    parser.add_argument("--barrier", action="store_true",
                        help="search.barrier: true (one generation at a time, the schedule before issue 19)")
    parser.add_argument("--keep-runs", type=Path, help="copy each paretotune run directory here (results.jsonl: "
                                                        "every record with its stage timings and errors)")
    parser.add_argument("--baseline-intervals", default="0",
                        help="comma list of evaluation.baseline_interval_s; one paretotune campaign each "
                             "(0: an A/B pair per candidate)")
    args = parser.parse_args()
    import torch

    work = Path(tempfile.mkdtemp(prefix="bench-helion-"))
    ours = {}
    for interval in (float(x) for x in args.baseline_intervals.split(",")):
        ours[f"baseline_interval_{interval:g}s"] = paretotune_side(work, args.m, args.n, args.generations, args.pool,
                                                                  args.workers, interval, args.barrier)
        if args.keep_runs:
            shutil.copytree(Path(ours[f"baseline_interval_{interval:g}s"]["acf_dir"]).parent,
                            args.keep_runs / f"interval{interval:g}", ignore=shutil.ignore_patterns("acf"))
        args.out.write_text(json.dumps({"paretotune": ours, "partial": True}, indent=1, default=str))
        print(json.dumps(ours, default=str), flush=True)
    first = next(iter(ours.values()))
    acfs = sorted(str(p) for p in Path(first["acf_dir"]).glob("*.acf"))[: args.acfs]
    theirs = helion_side(work, acfs, args.m, args.n, args.helion_budget_s)
    if args.keep_runs and (work / "helion_autotune.csv").exists():
        shutil.copy(work / "helion_autotune.csv", args.keep_runs / "helion_autotune.csv")
    rate = {k: (theirs["s_per_config"] / v["s_per_candidate_steady"]) if theirs["s_per_config"] else None
            for k, v in ours.items()}
    rate_steady = {k: (theirs["s_per_config_steady"] / v["s_per_candidate_steady"])
                   if theirs["s_per_config_steady"] else None for k, v in ours.items()}
    result = {
        "command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpu": torch.cuda.get_device_name(0), "shape": [args.m, args.n],
        "machine": {"cpu": cpu_model(), "topology": cpu_topology(), "load_average_1_5_15_min": load_average()},
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "triton": __import__("triton").__version__,
                     "helion": __import__("importlib.metadata").metadata.version("helion"),
                     "ptxas": subprocess.run([os.environ.get("TRITON_PTXAS_PATH", "ptxas"), "--version"],
                                             check=False, capture_output=True,
                                             text=True).stdout.strip().splitlines()[-1]},
        "paretotune": ours, "helion": theirs,
        "paretotune_rate_vs_helion": rate, "paretotune_rate_vs_helion_steady": rate_steady,
        "notes": "rate = Helion seconds per config / paretotune steady seconds per candidate (> 1: paretotune "
                 "is faster); _steady uses Helion's own CSV timestamps, first to last config",
    }
    args.out.write_text(json.dumps(result, indent=1, default=str))
    print(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
