"""Noise floor of ``validate``: how often does the baseline-vs-baseline control come out significant?

For each kernel, a baseline-only campaign is validated ``--repeats`` times (each time: ``--rounds`` interleaved
rounds of the baseline and the control) through the product's own validate worker
(:func:`paretotune.validate.worker.validate_in_process`), alternating two buffer modes:

- ``shared``: the baseline and the control are timed on the same input/output tensors (what search and
  ``validate`` do now);
- ``own``: each arm on tensors of its own (the method before; buffer placement alone moved one RMSNorm 2.5 %).

A control counts as significant when the two-sided Welch p (:func:`paretotune.pareto.stats.welch_t`) is below
the project's ``Thresholds().alpha``; whether its bootstrap CI (:func:`~paretotune.pareto.stats.speedup_ci`)
excludes 1 is counted too. Issue 16 asks for a significant control in at most 1 of 20 runs per kernel.

Run on the GPU machine (repository root): ``python benchmarks/bench_noise_floor.py --out DIR``. Each kernel
runs in its own spawned process (one validate worker, reused by all its repeats); a kernel that fails is
recorded and the others go on; ``DIR/noise_floor.json`` is rewritten after every run, the table printed last.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# name -> (kernel.source, shape); the first is the bandwidth-bound bf16 row kernel near 40 us on an H200
KERNELS: dict[str, tuple[str, dict[str, Any]]] = {
    "helion_rms_norm": ("paretotune.kernels.bundled.helion_rms_norm:helion_rms_norm",
                        {"name": "r8192x4096", "M": 8192, "N": 4096, "dtype": "bfloat16"}),
    "triton_softmax": ("paretotune.kernels.bundled.softmax:triton_softmax",
                       {"name": "wide", "M": 4096, "N": 16384, "dtype": "float16"}),
    "triton_layer_norm": ("paretotune.kernels.bundled.layer_norm:triton_layer_norm",
                          {"name": "wide", "M": 4096, "N": 8192, "dtype": "bfloat16"}),
}
MODES = ("shared", "own")
PER_TIMING_OVERHEAD_MS = 25.0  # per timing: do_bench's estimate and L2 flushes, or warm-up and graph capture
STARTUP_S = 40.0  # per kernel: spawn, imports, first compile (Helion codegen + ptxas)


def campaign_yaml(source: str, shape: dict[str, Any], timing: str) -> str:
    return textwrap.dedent(f"""\
        name: noise-floor
        kernel: {{source: "{source}"}}
        shapes: [{json.dumps(shape)}]
        objectives: [runtime]
        acf: {{search_space: none}}
        search: {{engine: random, generations: 1, pool_size: 6}}
        evaluation: {{timing: {timing}}}
        seed: 0
    """)


def judge(samples: dict[str, list[float]]) -> dict[str, Any]:
    """The control (-1) against the baseline: two-sided Welch p, ratio of means, bootstrap CI."""
    from paretotune.pareto.stats import Thresholds, speedup_ci, welch_t

    base, control = samples["baseline"], samples["-1"]
    thresholds = Thresholds()
    _, p = welch_t(base, control)
    ratio, low, high = speedup_ci(base, control, confidence=thresholds.confidence,
                                  n_resamples=thresholds.n_resamples, seed=thresholds.seed)
    return {"p": p, "ratio": ratio, "ci_low": low, "ci_high": high, "significant": bool(p < thresholds.alpha),
            "ci_excludes_1": bool(low > 1 or high < 1)}


def versions() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, Any] = {"python": sys.version.split()[0]}
    for name in ("torch", "triton", "helion", "compileiq"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    try:
        from paretotune.toolchain.ptxas import find_ptxas

        ptxas = find_ptxas()
        out["ptxas"], out["ptxas_path"] = ptxas.version, str(ptxas.path)
    except Exception as exc:  # noqa: BLE001 - recorded, the benchmark still runs what it can
        out["ptxas"] = f"not found: {exc}"
    return out


def shell(cmd: list[str]) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30, cwd=ROOT).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"runs": 0}
    devs = [abs(r["ratio"] - 1) for r in ok]
    return {"runs": len(ok), "significant": sum(r["significant"] for r in ok),
            "ci_excludes_1": sum(r["ci_excludes_1"] for r in ok), "max_abs_dev": max(devs),
            "mean_abs_dev": sum(devs) / len(devs), "timing": sorted({r["timing"] for r in ok}),
            "baseline_median_us": sorted(r["baseline_median_ms"] * 1000 for r in ok)[len(ok) // 2]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for noise_floor.json and the campaign files")
    ap.add_argument("--kernels", default=",".join(KERNELS), help=f"comma-separated subset of {list(KERNELS)}")
    ap.add_argument("--repeats", type=int, default=20, help="validate runs per kernel and buffer mode")
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds per validate run")
    ap.add_argument("--warmup-ms", type=float, default=3.0)
    ap.add_argument("--rep-ms", type=float, default=12.0)
    ap.add_argument("--timing", choices=("auto", "events", "cudagraph"), default="auto",
                    help="evaluation.timing of the campaigns")
    ap.add_argument("--budget-s", type=float, default=270.0,
                    help="no new run starts after this many seconds (each kernel gets its share)")
    args = ap.parse_args()

    from paretotune.validate.worker import validate_in_process
    from paretotune.toolchain.ptxas import find_ptxas

    names = [k for k in args.kernels.split(",") if k]
    unknown = [k for k in names if k not in KERNELS]
    if unknown:
        print(f"--kernels: unknown {unknown} (known: {list(KERNELS)})", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    per_run_s = 2 * args.rounds * (args.warmup_ms + args.rep_ms + PER_TIMING_OVERHEAD_MS) / 1000
    estimate = len(names) * (STARTUP_S + len(MODES) * args.repeats * per_run_s)
    print(f"estimate: {len(names)} kernels x {len(MODES)} modes x {args.repeats} runs x {args.rounds} rounds: "
          f"~{per_run_s:.2f} s per run, ~{estimate:.0f} s in all (budget {args.budget_s:.0f} s)", flush=True)
    ptxas = find_ptxas()
    doc: dict[str, Any] = {
        "command": " ".join([sys.executable, *sys.argv]), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_commit": shell(["git", "rev-parse", "HEAD"]), "git_dirty": bool(shell(["git", "status", "--porcelain"])),
        "gpu": shell(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem",
                      "--format=csv,noheader"]),
        "versions": versions(), "estimate_s": estimate,
        "settings": {k: getattr(args, k) for k in ("repeats", "rounds", "warmup_ms", "rep_ms", "timing", "budget_s")},
        "criterion": "significant: two-sided Welch p < Thresholds().alpha (baseline vs control); ci_excludes_1: "
                     "95% BCa bootstrap CI of the ratio of means excludes 1",
        "kernels": {}}
    out_json = args.out / "noise_floor.json"
    start = time.monotonic()
    for index, name in enumerate(names):
        deadline = start + args.budget_s * (index + 1) / len(names)  # a slow kernel cannot starve the next ones
        source, shape = KERNELS[name]
        path = args.out / f"campaign_{name}.yaml"
        text = campaign_yaml(source, shape, args.timing)
        path.write_text(text)
        entry: dict[str, Any] = {"source": source, "shape": shape, "runs": {m: [] for m in MODES}}
        doc["kernels"][name] = entry
        t0 = time.monotonic()
        try:
            with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
                for i in range(args.repeats):
                    for mode in (MODES if i % 2 == 0 else MODES[::-1]):  # alternate which mode goes first
                        if time.monotonic() > deadline:
                            entry["stopped"] = f"its share of the {args.budget_s:.0f} s budget was used up"
                            break
                        measured = pool.submit(validate_in_process, str(path), text, str(ptxas.path), ptxas.version,
                                               [], args.rounds, args.warmup_ms, args.rep_ms, seed=i,
                                               own_buffers=mode == "own").result()
                        data = measured[shape["name"]]
                        run = {"repeat": i, **judge(data["samples"]), "timing": data["timing"],
                               "baseline_median_ms": sorted(data["samples"]["baseline"])[args.rounds // 2],
                               "samples": data["samples"]}
                        entry["runs"][mode].append(run)
                    if "stopped" in entry:
                        break
                    entry["summary"] = {m: summarize(entry["runs"][m]) for m in MODES}
                    out_json.write_text(json.dumps(doc, indent=1, default=str))
        except Exception as exc:  # noqa: BLE001 - one kernel's failure (a crashed worker included), the rest go on
            entry["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        entry["summary"] = {m: summarize(entry["runs"][m]) for m in MODES}
        entry["wall_s"] = time.monotonic() - t0
        out_json.write_text(json.dumps(doc, indent=1, default=str))
    doc["wall_s"] = time.monotonic() - start
    out_json.write_text(json.dumps(doc, indent=1, default=str))

    print(f"\nGPU: {doc['gpu']}; torch {doc['versions'].get('torch')}, triton {doc['versions'].get('triton')}, "
          f"helion {doc['versions'].get('helion')}, ptxas {doc['versions'].get('ptxas')}; wall {doc['wall_s']:.0f} s")
    print(f"{'kernel':<20} {'timing':<10} {'base us':>8}  {'shared: sig / CI!=1 / n, max dev':<34} "
          f"{'own: sig / CI!=1 / n, max dev':<32}")
    for name, entry in doc["kernels"].items():
        cells = []
        for mode in MODES:
            s = entry["summary"][mode]
            cells.append(f"{s['significant']:>2} / {s['ci_excludes_1']:>2} / {s['runs']:>2}, "
                         f"{100 * s['max_abs_dev']:.2f} %" if s["runs"] else "no runs")
        s = entry["summary"]["shared"] if entry["summary"]["shared"]["runs"] else entry["summary"]["own"]
        timing = ",".join(s.get("timing", [])) or "-"
        base = f"{s['baseline_median_us']:.1f}" if s.get("runs") else "-"
        print(f"{name:<20} {timing:<10} {base:>8}  {cells[0]:<34} {cells[1]:<32}"
              + (f"  ERROR {entry['error'][:80]}" if "error" in entry else ""))
    print(f"written: {out_json}")
    return 0


if __name__ == "__main__":
    from paretotune.toolchain.ptxas import set_build_env_defaults

    set_build_env_defaults()
    raise SystemExit(main())
