"""ACFs on top of Helion's pretuned sm90 kernels (issue 17): the source post's experiment, through the CLI.

For each workload kernel (``.workloads/helion-pretuned-sm90``, materialised as ../shared/workloads/README.md
says) and its shape(s) from :data:`paretotune.kernels.workloads.WORKLOAD_SHAPES` (taken from the shapes the
kernel's own ``main()`` benchmarks), this script writes two campaign files and runs, exactly as a user would:

1. ``paretotune run`` with ``strategy: acf-only``: the config stays at the kernel's sm90 AOT heuristic config
   (the per-shape baseline), only CompileIQ ACFs are searched; objective ``runtime``;
2. ``paretotune run`` with ``strategy: joint`` and the same budget: Helion's own ConfigSpec (no hand-listed
   knob; tensor_descriptor indexing included on the GPU) jointly with ACFs;
3. ``paretotune validate`` on each run (fresh process, interleaved rounds, baseline-vs-baseline control).

Recorded per kernel: whether it imports and runs with the installed Helion (and the one-line why not), the
baseline (heuristic config) time, the best validated speedup with its CI and Holm p, the control's verdict, the
fraction of sampled ACFs that gave wrong answers and that faulted, and each search's wall time. The budget
(``--budget-s``) is split over the campaigns still to run, each time one starts: a campaign's wall-clock limit
is the time left over the campaigns left, less validation, so a kernel that fails fast leaves the rest more
time; ``--generations`` (6 x ``--pool-size`` 15 as in the issue) is only a cap. ``--strategies`` picks
acf-only and/or joint.
A kernel that fails is recorded with its reason and the script goes on. Results go to
``OUT/pretuned.json`` and ``OUT/pretuned.csv`` after every kernel (partial results survive a kill), with the
command, versions, date and GPU name; the table is printed last. ``--smoke``: one kernel, one generation.

Budget: each campaign costs ~40 s of start-up and baseline and ~45 s of validation besides its search. One
device call may run 10 minutes; ~540 s for 2-4 kernels gives each campaign 1-2 minutes. On the H200, from the
project root with ``.workloads`` carried (the same OUT for all calls: the table covers every kernel run so far)::

    python benchmarks/bench_pretuned.py --smoke --out /tmp/pretuned_smoke          # ~2-3 min
    python benchmarks/bench_pretuned.py --out benchmarks/results/pretuned_h200 --budget-s 540 \
        --kernels softmax,rms_norm,layer_norm
    python benchmarks/bench_pretuned.py --out benchmarks/results/pretuned_h200 --budget-s 540 \
        --kernels vector_add,cross_entropy,silu_mul_fp8
    python benchmarks/bench_pretuned.py --out benchmarks/results/pretuned_h200 --budget-s 540 \
        --kernels dynamic_per_token_scaled_fp8_quant,rms_norm_dynamic_per_token_quant,rms_norm_per_block_quant,scaled_mm
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import gpu_name, summarize_run, versions
from paretotune.kernels.workloads import TOLERANCES, WORKLOAD_SHAPES, WORKLOAD_SOURCES

ROOT = Path(__file__).resolve().parents[1]

STARTUP_S = 40.0  # a CLI campaign's fixed cost on the H200 host: imports, worker start-up, baseline
# outside search.wall_clock_s (which counts the CLI's start-up since f62b00d): the builds and measurements in
# flight at the limit (cut 5 %, at least 5 s, after it), the no-ACF twins and the front (after the limit: up to
# ~25 s for a joint campaign on the H200 host, 2026-12-01 D4, before the cut)
OUTSIDE_LOOP_S = 25.0
VALIDATE_S = 45.0  # one `paretotune validate` with --rounds 20 --top 3: 36-43 s on the H200 host (2026-12-01 F2-F4;
# at 30 s the last kernel of F3 had its validation cut by the call's budget)


def source_of(kernel: str) -> str:
    """Where the kernel is defined in the workload folder, as ``path:attr``."""
    return WORKLOAD_SOURCES.get(kernel, f"{kernel}/{kernel}.py:{kernel}")


def campaign_text(kernel: str, workloads: Path, strategy: str, generations: int, pool: int,
                  wall_s: float) -> str:
    shapes = ", ".join("{" + ", ".join(f"{k}: {v}" for k, v in s.items()) + "}" for s in WORKLOAD_SHAPES[kernel])
    tol = TOLERANCES.get(kernel)
    tol_line = f"\n  atol: {tol}\n  rtol: {tol}" if tol is not None else ""
    return (f"name: pretuned-{kernel}-{strategy}\n"
            f"kernel:\n  source: {workloads / source_of(kernel)}\n"
            f"  inputs: paretotune.kernels.workloads:{kernel}{tol_line}\n"
            f"shapes: [{shapes}]\nobjectives: [runtime]\nacf: {{search_space: ptxas-13.3}}\n"
            f"search: {{engine: compileiq, strategy: {strategy}, generations: {generations}, pool_size: {pool}, "
            f"wall_clock_s: {wall_s:.0f}}}\nevaluation: {{workers: 8}}\n")


def cli(args: list[str], timeout: float, log: Path) -> tuple[int, float, str]:
    """Run ``paretotune ARGS`` in a fresh process; return code, wall seconds and the last error line."""
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "paretotune.cli", *args], capture_output=True, text=True,
                              timeout=timeout, cwd=ROOT)
        code, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, out = 124, f"{exc.stdout or ''}{exc.stderr or ''}\ntimed out after {timeout:.0f} s"
        out = out if isinstance(out, str) else out.decode(errors="replace")
    log.write_text(out)
    lines = [ln for ln in out.strip().splitlines() if ln.strip() and "Warning" not in ln and "warn(" not in ln]
    return code, time.perf_counter() - start, (lines[-1][:300] if lines else "")


def row(kernel: str, record: dict[str, Any]) -> dict[str, Any]:
    """One flat CSV/table row per kernel."""
    flat: dict[str, Any] = {"kernel": kernel, "runs": record.get("runs"), "why_not": record.get("why_not", "")}
    for strategy in ("acf-only", "joint"):
        s = record.get(strategy) or {}
        best = s.get("best_validated") or {}
        control = s.get("control") or {}
        base = s.get("baseline_ms") or {}
        flat.update({
            f"{strategy}_baseline_ms": round(next(iter(base.values())), 4) if base else None,
            f"{strategy}_best_speedup": best.get("speedup"), f"{strategy}_ci": (
                f"{best['ci_low']:.3f}-{best['ci_high']:.3f}" if best.get("ci_low") is not None else ""),
            f"{strategy}_p_holm": best.get("p_holm"), f"{strategy}_significant": s.get("significant_candidates"),
            f"{strategy}_control": (f"{control['speedup']:.3f} (p {control['p_holm']:.2g})" if control else ""),
            f"{strategy}_wrong": s.get("acf_wrong_fraction"), f"{strategy}_fault": s.get("acf_fault_fraction"),
            f"{strategy}_evaluated": s.get("evaluated"), f"{strategy}_search_s": s.get("search_s"),
            f"{strategy}_error": s.get("error", ""),
        })
    return flat


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "pretuned_h200")
    parser.add_argument("--workloads", type=Path, default=ROOT / ".workloads" / "helion-pretuned-sm90")
    parser.add_argument("--kernels", default=",".join(WORKLOAD_SHAPES), help="comma-separated kernel names")
    parser.add_argument("--budget-s", type=float, default=720.0, help="GPU wall time for all kernels of this call")
    parser.add_argument("--generations", type=int, default=6, help="the most generations per campaign")
    parser.add_argument("--pool-size", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=20, help="validation rounds per arm")
    parser.add_argument("--strategies", default="acf-only,joint", help="comma-separated: acf-only, joint")
    parser.add_argument("--smoke", action="store_true",
                        help="one kernel (rms_norm), one generation, acf-only only, 10 validation rounds")
    args = parser.parse_args()
    kernels = ["rms_norm"] if args.smoke else [k.strip() for k in args.kernels.split(",") if k.strip()]
    strategies = ("acf-only",) if args.smoke else tuple(s.strip() for s in args.strategies.split(",") if s.strip())
    if not strategies or set(strategies) - {"acf-only", "joint"}:
        parser.error(f"--strategies {args.strategies!r}: give acf-only and/or joint")
    if args.smoke:
        args.rounds, args.budget_s = 10, min(args.budget_s, 240.0)
    unknown = [k for k in kernels if k not in WORKLOAD_SHAPES]
    if unknown:
        parser.error(f"unknown kernel(s) {unknown} (known: {', '.join(WORKLOAD_SHAPES)})")
    workloads = args.workloads.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    per_campaign = args.budget_s / len(kernels) / len(strategies) - VALIDATE_S
    # the wall-clock limit ends each campaign; generations are only capped (a kernel that fails fast leaves the
    # later campaigns more time, see below)
    generations = 1 if args.smoke else args.generations
    # a campaign's wall_clock_s counts from its process start, start-up and baseline included: on the H200
    # (2026-12-01) a 20 s limit left every campaign with its baseline alone
    search_wall = max(STARTUP_S + 20.0, per_campaign - OUTSIDE_LOOP_S)
    fixed = len(kernels) * len(strategies) * (STARTUP_S + VALIDATE_S)
    if fixed + len(kernels) * len(strategies) * 20 > args.budget_s:
        print(f"warning: {args.budget_s:.0f} s is below this call's fixed cost (~{fixed:.0f} s of start-up and "
              f"validation for {len(kernels)} kernel(s) x {len(strategies)} campaign(s)): each campaign gets "
              f"{generations} generation(s) and {search_wall:.0f} s of search; fewer kernels per call give "
              "each more", flush=True)
    summary_path = args.out / "pretuned.json"
    summary: dict[str, Any] = json.loads(summary_path.read_text()) if summary_path.is_file() else {"kernels": {}}
    summary.setdefault("calls", []).append({
        "command": " ".join([sys.executable, *sys.argv]), "date": datetime.datetime.now(datetime.timezone.utc)
        .isoformat(timespec="seconds"), "gpu": gpu_name(), "versions": versions(), "budget_s": args.budget_s,
        "kernels": kernels, "generations": generations, "pool_size": args.pool_size,
        "strategies": list(strategies),
        "generations_note": "a cap: each campaign ends at its wall-clock limit (the time left over the campaigns left)",
        "search_wall_clock_s_first": round(search_wall, 1)})
    print(f"{len(kernels)} kernel(s) x {list(strategies)}, at most {generations} generation(s) x {args.pool_size} "
          f"per campaign, first search wall limit {search_wall:.0f} s", flush=True)

    for kernel in kernels:
        record: dict[str, Any] = {"shapes": WORKLOAD_SHAPES[kernel]}
        folder = args.out / kernel
        folder.mkdir(exist_ok=True)
        if not (workloads / source_of(kernel).rpartition(":")[0]).is_file():
            record.update(runs=False, why_not=f"not materialised: {workloads / source_of(kernel)}")
        for strategy in strategies:
            if record.get("runs") is False:
                break
            left = args.budget_s - (time.monotonic() - started)
            if left < 20:
                record[strategy] = {"error": "skipped: the time budget is spent"}
                continue
            # the time left is split over the campaigns left, so a kernel that fails fast gives its time to the rest
            campaigns_left = (len(kernels) - kernels.index(kernel)) * len(strategies) - strategies.index(strategy)
            per_campaign = left / campaigns_left - VALIDATE_S
            search_wall = max(STARTUP_S + 20.0, per_campaign - OUTSIDE_LOOP_S)
            cfg = folder / f"{strategy}.yaml"
            cfg.write_text(campaign_text(kernel, workloads, strategy, generations, args.pool_size, search_wall))
            run = folder / f"run-{strategy}"
            if run.exists():
                import shutil

                shutil.rmtree(run)
            code, wall, last = cli(["run", str(cfg), "--out", str(run), "--quiet"],
                                   min(left, per_campaign + 120), folder / f"{strategy}.log")
            result: dict[str, Any] = {"exit_code": code, "search_s": round(wall, 1),
                                      "wall_clock_limit_s": round(search_wall, 1)}
            stored = (run / "results.jsonl").is_file()
            killed = code == 124 and stored  # the call's budget ended it: what it stored is a result, not a failure
            if killed:
                result["note"] = f"killed at {wall:.0f} s by this call's budget; not validated"
            elif code != 0 or not stored:
                result["error"] = last
                if strategy == "acf-only":  # the kernel itself does not import, build or run: say why, go on
                    record.update(runs=False, why_not=last)
                record[strategy] = result
                continue
            record["runs"] = True
            if not killed:
                # what is left of the budget (each campaign's share reserved VALIDATE_S for this), so that the
                # call's own limit never cuts a validation: D4 lost scaled_mm's to a 60 s floor past the budget
                vcode, vwall, vlast = cli(["validate", str(run), "--top", "3", "--rounds", str(args.rounds)],
                                          max(VALIDATE_S, min(args.budget_s - (time.monotonic() - started), 300)),
                                          folder / f"{strategy}-validate.log")
                result.update(validate_exit_code=vcode, validate_s=round(vwall, 1))
                if vcode != 0:
                    result["validate_error"] = vlast
            try:
                result.update(summarize_run(run))
            except Exception as exc:  # noqa: BLE001 - a summary that cannot be read is recorded, not fatal
                result["error"] = f"summary: {type(exc).__name__}: {exc}"
            record[strategy] = result
        if record.get("runs") is None:  # every campaign was skipped: not a verdict on the kernel
            record["why_not"] = "not run: this call's time budget was spent before its turn"
        summary["kernels"][kernel] = record
        summary_path.write_text(json.dumps(summary, indent=1, default=str))
        write_csv(summary, args.out / "pretuned.csv")
        verdict = {True: "runs", False: "does not run: "}.get(record.get("runs"), "")
        print(f"{kernel}: {verdict if record.get('runs') else verdict + str(record.get('why_not'))} "
              f"({time.monotonic() - started:.0f} s so far)", flush=True)
    print_table(summary)
    return 0


def write_csv(summary: dict[str, Any], path: Path) -> None:
    import csv

    rows = [row(k, r) for k, r in summary["kernels"].items()]
    if not rows:
        return
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def print_table(summary: dict[str, Any]) -> None:
    def f(v: Any, spec: str = ".3f") -> str:
        return "-" if v is None or v == "" else format(v, spec) if isinstance(v, float) else str(v)

    print(f"\n{'kernel':36s} {'runs':5s} {'base ms':>8s} | {'acf-only best (CI)':24s} {'wrong':>5s} {'fault':>5s} "
          f"{'s':>5s} | {'joint best (CI)':24s} {'wrong':>5s} {'fault':>5s} {'s':>5s}")
    for kernel, record in summary["kernels"].items():
        r = row(kernel, record)
        cells = []
        for s in ("acf-only", "joint"):
            best = f"{f(r[f'{s}_best_speedup'])}x ({r[f'{s}_ci'] or '-'})" if r[f"{s}_best_speedup"] else "-"
            cells.append(f"{best:24s} {f(r[f'{s}_wrong'], '.2f'):>5s} {f(r[f'{s}_fault'], '.2f'):>5s} "
                         f"{f(r[f'{s}_search_s'], '.0f'):>5s}")
        print(f"{kernel:36s} {str(bool(r['runs'])):5s} {f(r['acf-only_baseline_ms'], '.4f'):>8s} | "
              f"{cells[0]} | {cells[1]}")
        if not r["runs"]:
            print(f"  why not: {r['why_not']}")
    print("\nbest = highest validated speedup over the shape's heuristic-config baseline (fresh process, interleaved;"
          " significance and the control in pretuned.csv); wrong/fault = fraction of sampled ACFs")


if __name__ == "__main__":
    sys.exit(main())
