"""Joint vs sequential vs random search at equal evaluation budgets, on the CPU with static objectives.

The question (issue 10): does one joint search over kernel configs and generated ACFs find what sequential
tuning -- configs first without ACFs, then ACFs on the winning config -- misses? Each strategy gets the same
number of evaluations (the baseline is evaluated once more by every run, outside the budget):

* ``joint``: CompileIQ over [kernel config x PTXAS 13.3 controls] (``strategy: joint``).
* ``sequential``: CompileIQ over configs without ACFs for half the budget (less if the config space runs out),
  then CompileIQ over ACFs at the knee config of phase 1 (``strategy: sequential``).
* ``random``: uniform configs with ACFs sampled from the same space (``engine: random``).

Kernels: the bundled Triton softmax at two shapes (one kernel; a config must serve both) and the bundled
Triton matmul. Objectives: registers (min) and theoretical occupancy (max) per shape, from ptxas.
Score: hypervolume at budget of everything the run evaluated, in baseline-ratio space (each objective divided
by the default-config, no-ACF baseline), against the reference point 1.0 (only what beats the baseline on
every axis counts) and 1.1 (credits ties with the baseline). Mean per (kernel, strategy) with a 95% percentile
bootstrap CI, and bootstrap CIs of the differences between strategies. CompileIQ and its ACF sampler take no
seed, so repeats differ by design; ``--seed`` seeds the rest.

Candidates are built in this process (``evaluate_static``, the worker pool's job, without spawned workers):
static objectives are deterministic, so the evaluator affects run time only, not the numbers.

Run: ``CIQ_SEARCH_SPACES_DIR=/work/shared/compileiq python benchmarks/bench_strategies.py``
(writes benchmarks/results/strategies_cpu.json and .csv). On a GPU machine, runtime objectives need the
campaign's own evaluator, kept alive across the runs of a kernel (``--evaluator kept``: one CPU pool and one
GPU worker per kernel instead of one per run, so a run costs its evaluations, not process start-ups):
``--evaluator kept --kernels softmax,layer_norm --objectives "speedup, registers" --out .../strategies_h200``.
``speedup`` (neighbouring baseline time / candidate time) is the drift-free runtime objective.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from common import cpu_model, load_average

from paretotune.campaign.load import load_campaign
from paretotune.pareto import hypervolume, hypervolume_progress
from paretotune.runner import loop
from paretotune.runner.start import start_run
from paretotune.search.progress import hypervolume_progress as write_progress
from paretotune.toolchain.ptxas import export_for_triton, find_ptxas, set_build_env_defaults

set_build_env_defaults()  # before anything imports Triton (the imports above do not)

KERNELS = {
    "softmax": ("paretotune.kernels.bundled.softmax:triton_softmax",
                "[{name: wide, M: 4096, N: 16384, dtype: float16}, {name: square, M: 4096, N: 4096, dtype: float16}]"),
    "matmul": ("paretotune.kernels.bundled.matmul:triton_matmul", "[{name: square, M: 4096, N: 4096, K: 4096}]"),
    "layer_norm": ("paretotune.kernels.bundled.layer_norm:triton_layer_norm", "[{name: llm, M: 4096, N: 4096}]"),
}
STRATEGIES = {"joint": ("compileiq", "joint"), "sequential": ("compileiq", "sequential"), "random": ("random", "joint")}
REFS = (1.0, 1.1)
MAXIMIZED = ("speedup", "theoretical_occupancy", "occupancy", "l1tex_throughput")  # best_<these>: higher is better
ANYTIME = (11, 22, 33)  # also score the runs part-way (anytime performance), after this many evaluations
POOL = 11  # CompileIQ needs >= 3 + 2 x columns: 11 covers the softmax's 4 columns (2 objectives x 2 shapes)


def kernel_key(campaign: Any) -> str:
    """What the runs of one kernel share (its source and shapes): the key of what the evaluators keep."""
    return f"{campaign.spec.kernel.source} {[s.params for s in campaign.shapes]}"


class InProcessEvaluator:
    """The worker pool's ``evaluate_static`` called in this process (one candidate at a time).

    A kernel's PTX per (config, shape) is kept across the runs of the benchmark, as one long-lived worker
    would keep it: ACFs act only in ptxas, so this saves Triton compiles and changes no value.
    """

    _ptx: ClassVar[dict[str, dict[Any, Any]]] = {}
    accepts_feed = False  # one generation at a time
    measures_on_gpu = False

    def __init__(self, campaign: Any, ptxas: Any, run: Any, objectives: Any = None) -> None:
        from paretotune.build.static_job import _STATE, WorkerContext, init_worker

        init_worker(WorkerContext(campaign_path=str(campaign.path), campaign_text=campaign.text,
                                  ptxas_path=str(ptxas.path), ptxas_version=ptxas.version,
                                  acf_dir=str(run.path / "acf")))
        _STATE["ptx_cache"] = self._ptx.setdefault(kernel_key(campaign), {})

    def stream(self, candidates: Any) -> Any:
        from paretotune.build.static_job import evaluate_static

        return (evaluate_static(c) for c in candidates)

    def evaluate(self, candidates: Any) -> list[Any]:
        return list(self.stream(candidates))

    def close(self) -> None:
        pass


class KeptEvaluator:
    """The campaign's own evaluator (GPU worker + CPU pool), built for a kernel's first run and reused after.

    Every later run of the kernel gets its ``acf/`` folder linked to the first run's, so ACF paths (Triton's
    cache key) stay the ones the kept CPU pool precompiles and the kept GPU worker loads. ACF files are named
    by content, so runs cannot clash there. The GPU worker keeps its baseline build; timings still pair every
    candidate with a fresh baseline timing (unless the campaign sets ``baseline_interval_s``).
    """

    _kept: ClassVar[dict[str, tuple[Any, Path]]] = {}
    accepts_feed = False  # one generation at a time
    measures_on_gpu = True  # the evaluator it keeps measures on a GPU

    def __init__(self, campaign: Any, ptxas: Any, run: Any, objectives: Any) -> None:
        from paretotune.runner.evaluator import evaluator_for

        key = kernel_key(campaign)
        if key not in self._kept:
            self._kept[key] = (evaluator_for(campaign, ptxas, run, objectives), run.path / "acf")
        else:
            own = run.path / "acf"
            for stale in own.iterdir():  # only the baseline's record can be here yet; keep it in the kept folder
                stale.replace(self._kept[key][1] / stale.name)
            own.rmdir()
            own.symlink_to(self._kept[key][1], target_is_directory=True)
        self.inner = self._kept[key][0]

    def stream(self, candidates: Any) -> Any:
        return self.inner.stream(candidates)

    def evaluate(self, candidates: Any) -> list[Any]:
        return self.inner.evaluate(candidates)

    def close(self) -> None:
        pass  # closed once, by close_all, after every run

    @classmethod
    def close_all(cls) -> None:
        for evaluator, _ in cls._kept.values():
            evaluator.close()
        cls._kept.clear()


def campaign_text(kernel: str, strategy: str, generations: int, seed: int, objectives: str, pool: int,
                  workers: int, evaluation: str = "") -> str:
    source, shapes = KERNELS[kernel]
    engine, mode = STRATEGIES[strategy]
    return f"""name: bench-{kernel}-{strategy}
kernel: {{source: "{source}"}}
shapes: {shapes}
target: sm_90
objectives: [{objectives}]
acf: {{search_space: ptxas-13.3}}
search: {{engine: {engine}, strategy: {mode}, generations: {generations}, pool_size: {pool}}}
evaluation: {{workers: {workers}{evaluation}}}
seed: {seed}
"""


def run_one(kernel: str, strategy: str, repeat: int, seed: int, work: Path, ptxas: Any,
            args: argparse.Namespace) -> dict[str, Any]:
    name = f"{kernel}-{strategy}-{repeat}"
    path = work / f"{name}.yaml"
    timing = f", warmup_ms: {args.warmup_ms}, rep_ms: {args.rep_ms}" if args.evaluator != "in-process" else ""
    path.write_text(campaign_text(kernel, strategy, args.generations, seed, args.objectives, args.pool_size,
                                  args.workers, timing))
    campaign = load_campaign(path)
    run = start_run(campaign, work / name, ptxas, seed)
    start = time.perf_counter()
    records = loop.run_campaign(campaign, run, ptxas)
    wall = time.perf_counter() - start
    results, directions = run.results(), run.directions()
    write_progress(run.path)  # <run>/progress.csv, as a campaign writes it
    # the anytime curve over every column, as hv_ref* below (progress.csv leaves out columns nothing moved)
    progress = hypervolume_progress(results, directions)
    row: dict[str, Any] = {"kernel": kernel, "strategy": strategy, "repeat": repeat, "seed": seed,
                           "evaluations": len(records) - 1, "failed": sum(r.status != "ok" for r in records),
                           "distinct_configs": len({json.dumps(r.config, sort_keys=True) for r in records}),
                           "wall_s": round(wall, 1)}
    for ref in REFS:
        row[f"hv_ref{ref}"] = hypervolume(results, directions, ref=[ref] * len(directions))
    curve = progress["hypervolume"].to_numpy()
    for at in ANYTIME:  # hypervolume (ref 1.0) after this many search evaluations
        row[f"hv_ref1.0_at{at}"] = float(curve[min(at, len(curve) - 1)])
    ok = results[results["status"] == "ok"]
    for column, direction in directions.items():
        row[f"best_{column}"] = float(ok[column].min() if direction == "min" else ok[column].max())
        row[f"baseline_{column}"] = float(results.loc[results["is_baseline"], column].iloc[0])
    return row


def gpu_name() -> str | None:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def bootstrap_mean(x: np.ndarray, rng: np.random.Generator, n: int) -> tuple[float, float]:
    means = rng.choice(x, size=(n, len(x)), replace=True).mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def bootstrap_diff(a: np.ndarray, b: np.ndarray, rng: np.random.Generator, n: int) -> dict[str, float]:
    diffs = (rng.choice(a, size=(n, len(a)), replace=True).mean(axis=1)
             - rng.choice(b, size=(n, len(b)), replace=True).mean(axis=1))
    return {"mean_diff": float(a.mean() - b.mean()), "ci95": [float(np.percentile(diffs, 2.5)),
                                                             float(np.percentile(diffs, 97.5))],
            "p_boot_diff_le_0": float((diffs <= 0).mean())}


def summarize(frame: pd.DataFrame, n_boot: int) -> dict[str, Any]:
    rng = np.random.default_rng(12345)
    out: dict[str, Any] = {}
    for kernel, per_kernel in frame.groupby("kernel", sort=False):
        out[kernel] = {}
        best = [c for c in per_kernel.columns if c.startswith("best_") and per_kernel[c].notna().all()]
        for metric in [*(f"hv_ref{r}" for r in REFS), *(f"hv_ref1.0_at{at}" for at in ANYTIME), *best]:
            cells = {s: g[metric].to_numpy(dtype=float) for s, g in per_kernel.groupby("strategy", sort=False)}
            stats = {s: {"mean": float(v.mean()), "sd": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
                         "ci95": list(bootstrap_mean(v, rng, n_boot)), "values": [round(x, 6) for x in v]}
                     for s, v in cells.items()}
            pairs = {f"{a}-{b}": bootstrap_diff(cells[a], cells[b], rng, n_boot)
                     for a, b in (("joint", "sequential"), ("joint", "random"), ("sequential", "random"))
                     if a in cells and b in cells}
            minimize = metric.startswith("best_") and not any(f"best_{o}" in metric for o in MAXIMIZED)
            top = (min if minimize else max)(v["mean"] for v in stats.values())
            winners = [s for s, v in stats.items() if abs(v["mean"] - top) <= 1e-9]  # ties listed together
            out[kernel][metric] = {"by_strategy": stats, "differences": pairs, "best_mean": winners}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="softmax,matmul", help=f"comma list of {', '.join(KERNELS)}")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--generations", type=int, default=4, help="budget = generations x pool size")
    parser.add_argument("--pool-size", type=int, default=POOL)
    parser.add_argument("--objectives", default="registers, theoretical_occupancy", help="YAML list items")
    parser.add_argument("--evaluator", choices=("in-process", "campaign", "kept"), default="in-process",
                        help="campaign: the loop's own evaluator (worker pool; the GPU one for runtime objectives), "
                             "one per run; kept: the same, one per kernel (see KeptEvaluator)")
    parser.add_argument("--warmup-ms", type=float, default=10.0, help="evaluation.warmup_ms (GPU evaluators)")
    parser.add_argument("--rep-ms", type=float, default=40.0, help="evaluation.rep_ms (GPU evaluators)")
    parser.add_argument("--workers", type=int, default=1, help="evaluation.workers with --evaluator campaign")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bootstrap", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "strategies_cpu")
    parser.add_argument("--resummarize", type=Path, metavar="JSON",
                        help="recompute the summary of a recorded result file from its runs (no new runs)")
    args = parser.parse_args()
    if args.resummarize:
        record = json.loads(args.resummarize.read_text())
        record["summary"] = summarize(pd.DataFrame(record["runs"]), args.bootstrap)
        record["summary_recomputed"] = (f"{datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')}: "
                                        f"{Path(sys.argv[0]).name} --resummarize (same runs, current summarize())")
        args.resummarize.write_text(json.dumps(record, indent=2) + "\n")
        print(f"rewrote the summary of {args.resummarize}")
        return 0
    kernels = args.kernels.split(",")
    ptxas = find_ptxas()
    export_for_triton(ptxas)
    if args.evaluator == "in-process":
        loop.make_evaluator = InProcessEvaluator  # type: ignore[assignment] - same job, no spawned pool
    elif args.evaluator == "kept":
        loop.make_evaluator = KeptEvaluator  # type: ignore[assignment] - one evaluator per kernel
    load_before, started = load_average(), time.perf_counter()
    rows = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-strategies-") as tmp:
        try:
            for repeat in range(args.repeats):  # repeat-major: machine-load drift hits every strategy alike
                for kernel in kernels:
                    for strategy in STRATEGIES:
                        row = run_one(kernel, strategy, repeat, args.seed + repeat, Path(tmp), ptxas, args)
                        rows.append(row)
                        pd.DataFrame(rows).to_csv(args.out.with_suffix(".csv"), index=False)  # kept if cut short
                        print(f"{kernel:10s} {strategy:10s} #{repeat}: {row['evaluations']} evals "
                              f"({row['failed']} failed), HV@1.0 {row['hv_ref1.0']:.4f}, "
                              f"HV@1.1 {row['hv_ref1.1']:.4f}, {row['wall_s']} s", flush=True)
        finally:
            KeptEvaluator.close_all()
    frame = pd.DataFrame(rows)
    summary = summarize(frame, args.bootstrap)
    gpu = args.evaluator != "in-process" and any(o.strip() in ("runtime", "speedup", "occupancy")
                                                 for o in args.objectives.split(","))
    record = {
        "benchmark": "joint vs sequential vs random search, equal evaluation budgets, "
                     + ("runtime objectives measured on the GPU" if gpu else "static objectives (CPU)"),
        "command": f"cd {Path.cwd()} && CIQ_SEARCH_SPACES_DIR={os.environ.get('CIQ_SEARCH_SPACES_DIR', '')} "
                   f"{sys.executable} {' '.join(sys.argv)}",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "total_wall_s": round(time.perf_counter() - started, 1),
        "machine": {"nproc": os.cpu_count(), "cpu": cpu_model(), "platform": platform.platform(), "gpu": gpu_name(),
                    "python": platform.python_version(),
                    "load_average_1_5_15_min": {"before": load_before, "after": load_average()}},
        "versions": {**{p: version(p) for p in ("triton", "torch", "compileiq", "pymoo", "moocore", "numpy")},
                     "ptxas": ptxas.version},
        "setup": {"kernels": {k: KERNELS[k][0] for k in kernels}, "shapes": {k: KERNELS[k][1] for k in kernels},
                  "objectives": args.objectives, "target": "sm_90", "evaluator": args.evaluator,
                  **({"warmup_ms": args.warmup_ms, "rep_ms": args.rep_ms, "workers": args.workers} if gpu else {}),
                  "budget_evaluations": args.generations * args.pool_size, "pool_size": args.pool_size,
                  "repeats": args.repeats,
                  "strategies": {s: {"engine": e, "strategy": m} for s, (e, m) in STRATEGIES.items()},
                  "hypervolume": "baseline-ratio space; reference point 1.0 and 1.1 on every axis; hv_ref1.0_atN: "
                                 "after N search evaluations",
                  "ci": f"95% percentile bootstrap, {args.bootstrap} resamples (seed 12345)",
                  "seeds": "seed + repeat for numpy-seeded parts; CompileIQ and its ACF sampler are unseeded"},
        "summary": summary,
        "runs": rows,
    }
    args.out.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
    frame.to_csv(args.out.with_suffix(".csv"), index=False)
    for kernel, metrics in summary.items():
        for metric, s in metrics.items():
            cells = ", ".join(f"{k} {v['mean']:.4f} [{v['ci95'][0]:.4f}, {v['ci95'][1]:.4f}]"
                              for k, v in s["by_strategy"].items())
            print(f"{kernel} {metric}: {cells}")
    print(f"wrote {args.out.with_suffix('.json')} and .csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
