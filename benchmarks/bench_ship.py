"""Ship the result the way Helion loads it (issue 30), measured on the H200: for each chosen pretuned kernel, over
its whole ``main()`` sweep, the shipped heuristic against the kernel's own, both loaded by Helion unchanged.

Per kernel, exactly as a user runs it (each step a fresh ``paretotune`` process):

1. ``paretotune run``: an ``acf-only`` campaign with ``shapes: from-kernel`` (the sweep the kernel's ``main()``
   benchmarks, 10-24 shapes), objective ``runtime``, under a wall clock;
2. ``paretotune validate --per-bucket 1``: per bucket of the kernel's heuristic its best search candidate,
   measured on that bucket's shapes beside the baseline, the control and the no-ACF twin, then re-checked on
   fresh inputs (3 seeds x inputs x1, x1000, x0.001) in a worker killed at its time limit;
3. ``paretotune ship --out DIR``: ``DIR/_helion_aot_<kernel>_cuda_sm90.py`` plus ``DIR/acf/``;
4. re-time, in one process (``--retime``, a subprocess of this script): two copies of the kernel's file, one
   beside its original heuristic and one beside the shipped one (so that Helion's own lookup, ``key_<kernel>`` and
   caches pick each file; ``HELION_HEURISTIC_DIR`` unset), called as ``main()`` calls it (``kernel(*args)``), on
   every sweep shape: the config Helion picked for each copy (read back from the bound kernel), their outputs
   compared, then old, new and a second old (the control) timed on the same buffers in shuffled rounds with the
   project's timing (``execution.timing.bench`` with CUDA graphs, events only where a call cannot be captured: the
   kernel's GPU time, not Helion's per-call dispatch). Per shape:
   speedup (old / new mean) with its bootstrap CI, the control's noise floor, the buckets changed; per kernel:
   geomean, worst shape, whether the worst is >= 1.00x within its noise floor.

Everything goes to ``OUT/ship.json`` (and ``OUT/ship.csv``, one row per kernel), rewritten after every step, so a
kill keeps what finished; each kernel's files (campaign, logs, run, ship folder, ``retime.json``) lie in
``OUT/<kernel>/``. The budget (``--budget-s``) is checked before every step: a kernel that cannot finish in what is
left is skipped with that reason; each step runs under a time limit (what is left).

Expected device time: about 4-5 minutes per kernel on the H200 host (each of the four CLI processes and the
re-timing process spends 20-40 s on imports, CUDA and Helion's per-shape binds before its work; the search runs
``--search-s`` from its process start; validation, re-check and re-timing 1-2 minutes each for 24 shapes), so two
kernels per 10-minute call. From the project root, ``.workloads`` carried, the same OUT for every call::

    python benchmarks/bench_ship.py --out benchmarks/results/ship_h200 --budget-s 540 --kernels vector_add,cross_entropy
    python benchmarks/bench_ship.py --out benchmarks/results/ship_h200 --budget-s 540 \
        --kernels dynamic_per_token_scaled_fp8_quant,scaled_mm
    python benchmarks/bench_ship.py --out benchmarks/results/ship_h200 --budget-s 540 --kernels rms_norm_per_block_quant

or, on a 2-GPU host, two kernels per GPU in one call (``benchmarks/device_call.sh``, step ``ship`` with
``SHIP_ARGS="--kernels ..."`` per stream; each stream writes its own OUT).

``--check`` (no GPU needed) writes and loads every campaign, computes every bucket and exercises the kernel
copies Helion's lookup resolves, without launching anything.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import importlib.util
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import gpu_name, versions

from paretotune.kernels.sweeps import SWEEPS
from paretotune.kernels.workloads import TOLERANCES

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ("vector_add", "cross_entropy", "dynamic_per_token_scaled_fp8_quant", "rms_norm_per_block_quant",
           "scaled_mm")  # the five pretuned kernels whose sweep has at most 24 shapes
CLI_STARTUP_S = 40.0  # one CLI process's imports, workers and CUDA start on the H200 host (bench_pretuned.py)
MIN_STEP_S = {"run": 90.0, "validate": 60.0, "ship": 30.0, "retime": 45.0}  # below this a step is not started


def campaign_text(kernel: str, workloads: Path, search_s: float, pool: int) -> str:
    tol = TOLERANCES.get(kernel)
    tol_line = f"\n  atol: {tol}\n  rtol: {tol}" if tol is not None else ""
    return (f"name: ship-{kernel}\n"
            f"kernel:\n  source: {workloads / kernel / (kernel + '.py')}:{kernel}\n"
            f"  inputs: paretotune.kernels.workloads:{kernel}{tol_line}\n"
            "shapes: from-kernel\nobjectives: [runtime]\nacf: {search_space: ptxas-13.3}\n"
            f"search: {{engine: random, strategy: acf-only, generations: 1000, pool_size: {pool}, "
            f"wall_clock_s: {search_s:.0f}}}\n"
            "evaluation: {workers: 14, warmup_ms: 5, rep_ms: 20, baseline_interval_s: 5}\n")


def cli(args: list[str], timeout: float, log: Path) -> tuple[int, float, str]:
    """``paretotune ARGS`` in a fresh process: exit code, wall seconds, the last meaningful output line."""
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "paretotune.cli", *args], capture_output=True, text=True,
                              timeout=max(timeout, 1.0), cwd=ROOT)
        code, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code = 124
        out = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                      for x in (exc.stdout, exc.stderr)) + f"\ntimed out after {timeout:.0f} s"
    log.write_text(out)
    lines = [ln for ln in out.strip().splitlines() if ln.strip() and "Warning" not in ln and "warn(" not in ln]
    return code, round(time.perf_counter() - start, 1), (lines[-1][:300] if lines else "")


# -- re-timing the shipped heuristic against the kernel's own, in one process ------------------------------------

def _copy_kernel(workloads: Path, kernel: str, heuristic: Path, acf_dir: Path | None, dest: Path) -> Path:
    """``dest/<kernel>.py`` (a copy of the kernel's file) beside ``heuristic`` under the name Helion looks for."""
    dest.mkdir(parents=True, exist_ok=True)
    source = workloads / kernel / f"{kernel}.py"
    shutil.copyfile(source, dest / source.name)
    shutil.copyfile(heuristic, dest / f"_helion_aot_{kernel}_cuda_sm90.py")
    if acf_dir is not None and acf_dir.is_dir():
        shutil.copytree(acf_dir, dest / "acf")
    return dest / source.name


def _import_copy(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # the kernels' bodies may look their module up
    spec.loader.exec_module(module)
    return module


def kernel_copies(workloads: Path, kernel: str, ship_dir: Path, scratch: Path) -> tuple[Any, Any]:
    """The kernel twice, once beside its own heuristic and once beside the shipped one."""
    own = workloads / kernel / f"_helion_aot_{kernel}_cuda_sm90.py"
    shipped = ship_dir / f"_helion_aot_{kernel}_cuda_sm90.py"
    if scratch.exists():
        shutil.rmtree(scratch)
    old = _import_copy(_copy_kernel(workloads, kernel, own, None, scratch / "old"), f"ship_bench_old_{kernel}")
    new = _import_copy(_copy_kernel(workloads, kernel, shipped, ship_dir / "acf", scratch / "new"),
                       f"ship_bench_new_{kernel}")
    return getattr(old, kernel), getattr(new, kernel)


def _tensors(args: tuple[Any, ...]) -> list[Any]:
    import torch

    return [a for a in args if isinstance(a, torch.Tensor)]


def _outputs(result: Any, args: tuple[Any, ...], written: list[int]) -> list[Any]:
    from paretotune.measure.arms import tensor_leaves

    return [t.clone() for t in tensor_leaves(result)] + [_tensors(args)[i].clone() for i in written]


def retime(kernel: str, workloads: Path, ship_dir: Path, out: Path, rounds: int, warmup_ms: float,
           rep_ms: float, deadline: float) -> dict[str, Any]:
    """See the module docstring, step 4; writes ``out`` after every shape."""
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    export_for_triton(find_ptxas())  # before triton is imported: the shipped ACFs need ptxas 13.3
    os.environ.pop("HELION_HEURISTIC_DIR", None)  # each copy's own file, found beside it
    import torch

    from paretotune.measure.arms import written_by
    from paretotune.validate.recheck import identical
    from paretotune.measure.timing import bench, check_output
    from paretotune.kernels import workloads as factories
    from paretotune.kernels.helion import import_helion
    from paretotune.pareto.stats import Thresholds, compare, judge_control

    import_helion()
    old, new = kernel_copies(workloads, kernel, ship_dir, out.parent / "retime-copies")
    summary = json.loads((ship_dir / "ship.json").read_text())
    # graphs at every length: events around a call through Helion's dispatch time the dispatch too (rms_norm
    # M2048_N768: 78 µs under events, 3 µs of kernel; M145956_N384, 57 µs of kernel: floor 17.5 % under events,
    # h200_2026-12-03b), and single launches carry the launch's jitter (floors of 6-60 %, h200_2026-12-03a); the
    # dispatch is the same code for both heuristic files. Per shape: events where a call cannot be captured
    method = "cudagraph"
    tol = TOLERANCES.get(kernel, 1e-2)
    factory = getattr(factories, kernel)
    record: dict[str, Any] = {"kernel": kernel, "method": method, "rounds": rounds, "rep_ms": rep_ms,
                              "shapes": {}, "done": False}
    rng = random.Random(0)
    for shape in SWEEPS[kernel]:
        if time.monotonic() > deadline:
            record["cut"] = f"time budget spent after {len(record['shapes'])} of {len(SWEEPS[kernel])} shapes"
            break
        label = shape["name"]
        params = {k: v for k, v in shape.items() if k != "name"}
        entry: dict[str, Any] = {"bucket": summary["shapes"].get(label, {}).get("bucket")}
        try:
            args = tuple(factory(params, "cuda", 1234))
            tensors = _tensors(args)
            pristine = [t.clone() for t in tensors]

            def restore() -> None:
                for t, p in zip(tensors, pristine, strict=True):
                    t.copy_(p)

            result_old = old(*args)
            torch.cuda.synchronize()
            written = written_by(tensors, pristine)
            expected = _outputs(result_old, args, written)
            restore()
            got = _outputs(new(*args), args, written)
            torch.cuda.synchronize()
            restore()
            entry["old_config"] = dict(old.bind(args)._config.config)
            entry["new_config"] = dict(new.bind(args)._config.config)
            entry["acf"] = os.path.basename(entry["new_config"].get("advanced_controls_file") or "") or None
            entry["bit_identical"] = identical(got, expected)
            entry["output_check"] = check_output(got, expected, tol, tol) or "ok"
            arms = {"old": lambda: old(*args), "new": lambda: new(*args), "control": lambda: old(*args)}
            samples: dict[str, list[float]] = {k: [] for k in arms}
            used = method
            try:
                restore()
                bench(arms["old"], warmup_ms, rep_ms, used)
            except Exception as exc:  # noqa: BLE001 - a kernel call CUDA graphs cannot capture: plain events
                used, entry["cudagraph_error"] = "events", f"{type(exc).__name__}: {str(exc)[:200]}"
            entry["method"] = used
            for _ in range(rounds):
                order = list(arms)
                rng.shuffle(order)
                for key in order:
                    restore()
                    samples[key].append(bench(arms[key], warmup_ms, rep_ms, used).median_ms)
            control = judge_control(samples["old"], samples["control"], thresholds=Thresholds())
            verdict = compare(samples["old"], samples["new"], direction="min", thresholds=Thresholds())
            floor = control.floor if math.isfinite(control.floor) else 0.0
            entry.update(old_ms=sum(samples["old"]) / rounds, new_ms=sum(samples["new"]) / rounds,
                         speedup=verdict.speedup, ci_low=verdict.ci_low, ci_high=verdict.ci_high,
                         p=verdict.p_value, noise_floor=floor, control_reliable=control.reliable,
                         changed=entry["new_config"] != entry["old_config"])
        except Exception as exc:  # noqa: BLE001 - recorded per shape; the sweep goes on
            entry["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        record["shapes"][label] = entry
        out.write_text(json.dumps(finish(record), indent=1, default=str))
    record["done"] = "cut" not in record
    out.write_text(json.dumps(finish(record), indent=1, default=str))
    return record


def finish(record: dict[str, Any]) -> dict[str, Any]:
    """Per-kernel figures from the per-shape ones: geomean, worst shape, whether it is >= 1.00x within its floor."""
    timed = {k: v for k, v in record["shapes"].items() if "speedup" in v}
    if not timed:
        return record
    logs = [math.log(v["speedup"]) for v in timed.values() if v["speedup"] > 0]
    worst = min(timed, key=lambda k: timed[k]["speedup"])
    w = timed[worst]
    record.update(geomean=math.exp(sum(logs) / len(logs)), worst_shape=worst, worst_speedup=w["speedup"],
                  worst_ci=[w["ci_low"], w["ci_high"]], worst_noise_floor=w["noise_floor"],
                  worst_within_floor=w["speedup"] >= 1.0 - w["noise_floor"],
                  never_slower=all(v["speedup"] >= 1.0 - v["noise_floor"] for v in timed.values()),
                  shapes_changed=sum(bool(v.get("changed")) for v in timed.values()), shapes_timed=len(timed),
                  all_outputs_ok=all(v.get("output_check") == "ok" for v in timed.values()))
    return record


# -- the per-kernel pipeline ----------------------------------------------------------------------------------

def run_kernel(kernel: str, args: argparse.Namespace, workloads: Path, deadline: float, record: dict[str, Any],
               save: Any) -> dict[str, Any]:
    """Steps 1-4 for one kernel, filling ``record`` (saved after every step)."""
    folder = args.out / kernel
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    record.update(shapes=len(SWEEPS[kernel]), steps={})
    if not (workloads / kernel / f"{kernel}.py").is_file():
        record["skipped"] = f"not materialised: {workloads / kernel}"
        return record
    left = deadline - time.monotonic()
    earlier = args.reuse_runs / kernel / "run" if args.reuse_runs else None
    if earlier is not None and not (earlier / ("results.jsonl" if args.revalidate else "recheck.json")).is_file():
        earlier = None  # not searched (--revalidate) or not validated there: searched and validated here
    reused = ("validate", "ship", "retime") if args.revalidate else ("ship", "retime")
    need = (sum(MIN_STEP_S[s] for s in reused) if earlier is not None
            else sum(MIN_STEP_S.values()) + args.search_s - CLI_STARTUP_S)
    if left < need:
        record["skipped"] = f"{left:.0f} s left of the budget, this kernel needs about {need:.0f} s"
        return record
    cfg = folder / "campaign.yaml"
    cfg.write_text(campaign_text(kernel, workloads, args.search_s, args.pool_size))
    run, ship = folder / "run", folder / "ship"
    steps = [("run", ["run", str(cfg), "--out", str(run), "--quiet"], args.search_s + 120),
             ("validate", ["validate", str(run), "--per-bucket", str(args.per_bucket), "--rounds", str(args.rounds),
                           "--rep-ms", str(args.rep_ms), "--warmup-ms", "3"], 400),
             ("ship", ["ship", str(run), "--out", str(ship), "--json"], 120)]
    if earlier is not None:  # an earlier call's run: ship it (validated there), or validate it again first
        shutil.copytree(earlier, run)
        record["reused_run"] = str(earlier)
        steps = steps[1:] if args.revalidate else steps[2:]
    for name, cmd, limit in steps:
        left = deadline - time.monotonic()
        if left < MIN_STEP_S[name] * 0.5:
            record["skipped"] = f"the budget ended before {name}"
            return record
        code, wall, last = cli(cmd, min(limit, left), folder / f"{name}.log")
        record["steps"][name] = {"exit_code": code, "wall_s": wall, "last_line": last}
        save()
        if code != 0:
            record["error"] = f"{name}: exit {code}: {last}"
            return record
    record.update(cost(run, ship, record))
    left = deadline - time.monotonic()
    retime_json = folder / "retime.json"
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--retime", kernel, "--workloads",
                               str(workloads), "--ship-dir", str(ship), "--retime-out", str(retime_json),
                               "--retime-rounds", str(args.retime_rounds), "--deadline-s", str(max(left - 15, 10))],
                              capture_output=True, text=True, timeout=max(left, 10), cwd=ROOT)
        (folder / "retime.log").write_text(proc.stdout + proc.stderr)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        code = 124
    record["steps"]["retime"] = {"exit_code": code, "wall_s": round(time.perf_counter() - start, 1)}
    if retime_json.is_file():
        timed = json.loads(retime_json.read_text())
        record["retime"] = {k: v for k, v in timed.items() if k != "shapes"}
        record["per_shape"] = timed["shapes"]
    return record


def cost(run: Path, ship: Path, record: dict[str, Any]) -> dict[str, Any]:
    """What the sweep cost per shape: search throughput, validation seconds per shape, buckets changed."""
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    shapes = record["shapes"]
    meta = json.loads((run / "run.json").read_text())
    phases = ((meta.get("timing") or [{}])[-1]).get("phases_s", {}) or {}
    shipped = json.loads((ship / "ship.json").read_text())
    recheck = json.loads((run / "recheck.json").read_text()) if (run / "recheck.json").is_file() else {}
    checks = recheck.get("checks", [])
    search_s = float(phases.get("search") or 0.0)
    return {"evaluated": len(rows) - 1, "failed": sum(r.get("status") != "ok" for r in rows[1:]),
            "search_s": round(search_s, 1),
            "shape_evaluations_per_s": round((len(rows) - 1) * shapes / search_s, 2) if search_s else None,
            "validate_s_per_shape": (round(record["steps"]["validate"]["wall_s"] / shapes, 2)
                                     if "validate" in record["steps"] else None),  # None: a reused run's
            "buckets_seen": shipped.get("buckets_seen"), "buckets_changed": shipped.get("changed"),
            "rechecks": {"run": len(checks), "passed": sum(c.get("passed") == c.get("run") for c in checks),
                         "bit_identical": sum(bool(c.get("bit_identical")) for c in checks)}}


def table_row(kernel: str, rec: dict[str, Any]) -> dict[str, Any]:
    rt = rec.get("retime") or {}
    return {"kernel": kernel, "shapes": rec.get("shapes"), "buckets_changed": rec.get("buckets_changed"),
            "buckets_seen": rec.get("buckets_seen"), "geomean": rt.get("geomean"), "worst_shape": rt.get("worst_shape"),
            "worst_speedup": rt.get("worst_speedup"), "worst_noise_floor": rt.get("worst_noise_floor"),
            "never_slower": rt.get("never_slower"), "shapes_timed": rt.get("shapes_timed"),
            "evaluated": rec.get("evaluated"), "rechecks_passed": (rec.get("rechecks") or {}).get("passed"),
            "note": rec.get("skipped") or rec.get("error") or rt.get("cut") or ""}


def check(kernels: list[str], workloads: Path, scratch: Path) -> int:
    """CPU: every campaign loads with its whole sweep, every bucket is computed, and each kernel copy resolves
    to the heuristic beside it through Helion's own lookup (the original standing in for the shipped file)."""
    from paretotune.ship.files import ship_request
    from paretotune.ship.make import helion_buckets, helion_view
    from paretotune.kernels.helion_heuristic import find_heuristic

    for kernel in kernels:
        request = ship_request(campaign_text(kernel, workloads, 60, 16), scratch / f"{kernel}.yaml")
        view = helion_view(request)
        assert view is not None, kernel
        _, buckets = helion_buckets(request, view)
        fake_ship = scratch / f"ship-{kernel}"
        fake_ship.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(view.heuristic, fake_ship / f"_helion_aot_{kernel}_cuda_sm90.py")
        old, new = kernel_copies(workloads, kernel, fake_ship, scratch / f"copies-{kernel}")
        found = (find_heuristic(old, 90), find_heuristic(new, 90))
        assert found[0].parent.name == "old" and found[1].parent.name == "new", found
        print(f"{kernel}: {len(request.shapes)} shapes in {len(set(b.bucket for b in buckets.values()))} buckets; "
              f"copies resolve to {found[0].parent.name}/ and {found[1].parent.name}/")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "ship_h200")
    parser.add_argument("--workloads", type=Path, default=ROOT / ".workloads" / "helion-pretuned-sm90")
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--budget-s", type=float, default=540.0, help="wall time for this call, all kernels")
    parser.add_argument("--search-s", type=float, default=70.0, help="each campaign's wall clock (from its start)")
    parser.add_argument("--pool-size", type=int, default=16)
    parser.add_argument("--per-bucket", type=int, default=1, help="validate --per-bucket")
    parser.add_argument("--rounds", type=int, default=10, help="validate --rounds")
    parser.add_argument("--rep-ms", type=float, default=10.0, help="validate --rep-ms")
    parser.add_argument("--retime-rounds", type=int, default=10)
    parser.add_argument("--check", action="store_true", help="CPU only: campaigns, buckets, kernel copies")
    parser.add_argument("--reuse-runs", type=Path, help="an earlier call's OUT: a kernel whose run there was "
                        "validated is shipped and re-timed from it (no new search or validation)")
    parser.add_argument("--revalidate", action="store_true", help="with --reuse-runs: validate the earlier run "
                        "again (here, with this code's rules) before shipping it; any finished run is taken")
    parser.add_argument("--retime", metavar="KERNEL", help=argparse.SUPPRESS)
    parser.add_argument("--ship-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--retime-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--deadline-s", type=float, default=300.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    workloads = args.workloads.resolve()
    if args.retime:
        retime(args.retime, workloads, args.ship_dir, args.retime_out, args.retime_rounds, 3.0, 15.0,
               time.monotonic() + args.deadline_s)
        return 0
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    unknown = [k for k in kernels if k not in SWEEPS]
    if unknown:
        parser.error(f"unknown kernel(s) {unknown} (known: {', '.join(SWEEPS)})")
    if args.check:
        import tempfile

        with tempfile.TemporaryDirectory() as scratch:
            return check(kernels, workloads, Path(scratch))
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.budget_s
    path = args.out / "ship.json"
    summary: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {"kernels": {}}
    summary.setdefault("calls", []).append({
        "command": " ".join([sys.executable, *sys.argv]), "gpu": gpu_name(), "versions": versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "kernels": kernels,
        "budget_s": args.budget_s, "search_s": args.search_s, "per_bucket": args.per_bucket,
        "validate_rounds": args.rounds, "retime_rounds": args.retime_rounds})

    def save() -> None:
        path.write_text(json.dumps(summary, indent=1, default=str))
        rows = [table_row(k, r) for k, r in summary["kernels"].items()]
        with (args.out / "ship.csv").open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["kernel"])
            writer.writeheader()
            writer.writerows(rows)

    for kernel in kernels:
        record = summary["kernels"][kernel] = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat()}
        run_kernel(kernel, args, workloads, deadline, record, save)
        save()
        print(json.dumps(table_row(kernel, summary["kernels"][kernel]), default=str), flush=True)
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
