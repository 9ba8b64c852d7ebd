"""Amortized ncu wall time per candidate: one ncu process for a batch of N Triton candidates, versus one ncu
process per candidate, in one run on one GPU.

    python benchmarks/bench_ncu_batch.py --out benchmarks/results/ncu_batch_h200.json [--n 32] [--singles 4]

Candidates: N configs (BLOCK x num_warps x num_stages) of a Triton kernel y = 2x over 16M fp32 elements (the
kernel of shared/reference/ncu-samples/probe_triton_k.py); metrics: achieved occupancy and L1TEX throughput
(6 replay passes together). Both ways use the same runner and child (paretotune.ncu.run_batch), measured with
Triton's cache already warm (a first pass without ncu compiles every config, timed separately), so the
comparison is ncu + process overhead, not compilation.

One ncu process per candidate costs ~8-10 s on the H200 (ncu.md, section 4), so only ``--singles`` of them
are measured and their mean is extrapolated to N; the output says so. Goal (issue 4): <= 0.5 s per candidate
in the batch and >= 15x less than one process per candidate. Takes about 1.5-2 minutes on an H200.
"""
from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
L1 = "l1tex__throughput.avg.pct_of_peak_sustained_active"
BLOCKS = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
WARPS = (1, 2, 4, 8)
STAGES = (1, 2, 3, 4)
_INPUTS: dict[int, Any] = {}
_KERNEL: list[Any] = []


def _kernel() -> Any:
    """The Triton kernel, defined on first use so that importing this module (the child does) stays cheap."""
    if not _KERNEL:
        import triton
        import triton.language as tl

        @triton.jit
        def _bench_copy(X, Y, N, B: tl.constexpr):
            o = tl.program_id(0) * B + tl.arange(0, B)
            m = o < N
            tl.store(Y + o, tl.load(X + o, mask=m) * 2, mask=m)

        _KERNEL.append(_bench_copy)
    return _KERNEL[0]


def make_launch(params: dict[str, Any]) -> Callable[[], None]:
    """Child-side factory: compile is triggered by the warm-up launch, outside any NVTX range."""
    import torch
    import triton

    n = int(params["n"])
    if n not in _INPUTS:
        x = torch.randn(n, device=params.get("device", "cuda"))
        _INPUTS[n] = (x, torch.empty_like(x))
    x, y = _INPUTS[n]
    block, warps, stages = int(params["block"]), int(params["num_warps"]), int(params["num_stages"])
    grid = (triton.cdiv(n, block),)
    kernel = _kernel()

    def launch() -> None:
        kernel[grid](x, y, n, B=block, num_warps=warps, num_stages=stages)

    return launch


def _configs(n: int) -> list[tuple[int, int, int]]:
    grid = [(b, w, s) for s, b, w in itertools.product(STAGES, BLOCKS, WARPS)]
    if n > len(grid):
        raise SystemExit(f"--n {n}: at most {len(grid)} distinct configs")
    return grid[:n]


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _source_version() -> str:
    import paretotune

    return f"{paretotune.__version__} (source tree)"


def _driver() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             check=False, capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join((__doc__ or "").split("\n\n")[0].split()))
    parser.add_argument("--out", required=True, type=Path, help="JSON file to write")
    parser.add_argument("--n", type=int, default=32, help="candidates in the batch (default 32)")
    parser.add_argument("--singles", type=int, default=4, help="one-process-per-candidate runs to measure")
    parser.add_argument("--numel", type=int, default=1 << 24, help="elements per launch (default 16M)")
    parser.add_argument("--workdir", type=Path, default=None, help="keep ncu logs here (default: a temp dir)")
    parser.add_argument("--device", default="cuda", help=argparse.SUPPRESS)  # "cpu": dry run of the plumbing
    args = parser.parse_args(argv)

    import torch

    from paretotune.ncu import BatchItem, BatchPolicy, NcuOptions, find_ncu, python_child, run_batch, validate_metrics
    from paretotune.ncu.catalog import query_metrics
    from paretotune.ncu.child import write_spec
    from paretotune.ncu.run import child_env

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("bench_ncu_batch: needs a CUDA GPU")
    ncu = find_ncu()
    options = NcuOptions(metrics=(OCC, L1))
    validate_metrics(options.metrics, query_metrics(ncu.path))  # once, outside the timed runs
    policy = BatchPolicy(validate_metrics=False)
    items = [BatchItem(i, f"n{args.numel}", {"n": args.numel, "block": b, "num_warps": w, "num_stages": s,
                                             "device": args.device})
             for i, (b, w, s) in enumerate(_configs(args.n))]
    child = python_child("bench_ncu_batch:make_launch", sys_path=[str(HERE)])
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-ncu-"))
    workdir.mkdir(parents=True, exist_ok=True)

    # 1. Compile every config once without ncu, so both timed ways find Triton's cache warm.
    spec = write_spec(workdir / "warm_spec.json", items, "bench_ncu_batch:make_launch", sys_path=[str(HERE)])
    start = time.perf_counter()
    warm = subprocess.run([sys.executable, "-m", "paretotune.ncu.child", str(spec)], check=False,
                          capture_output=True, text=True, env=child_env())
    compile_s = time.perf_counter() - start
    if warm.returncode != 0:
        raise SystemExit(f"warm-up child failed:\n{warm.stderr[-3000:]}")

    # 2. One ncu process for the whole batch.
    start = time.perf_counter()
    batch = run_batch(items, child, options, ncu=ncu, policy=policy, workdir=workdir)
    batch_s = time.perf_counter() - start

    # 3. One ncu process per candidate, for the first --singles candidates.
    singles: list[dict[str, Any]] = []
    step = max(1, len(items) // max(1, args.singles))
    for item in items[::step][: args.singles]:  # spread over the configs
        start = time.perf_counter()
        one = run_batch([item], child, options, ncu=ncu, policy=policy, workdir=workdir)
        wall = time.perf_counter() - start
        res = one.items[0]
        singles.append({"candidate_id": item.candidate_id, "wall_s": round(wall, 3), "ok": res.ok,
                        "metrics": res.metrics, "error": res.error,
                        "batch_metrics": batch.items[int(item.candidate_id)].metrics})
    single_mean = statistics.mean(s["wall_s"] for s in singles) if singles else float("nan")
    per_candidate = batch_s / len(items)
    result = {
        "benchmark": "ncu batch vs one ncu process per candidate",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": [sys.executable, *sys.argv] if argv is None else [sys.executable, __file__, *argv],
        "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else args.device,
        "driver": _driver(),
        "host": platform.node(),
        "versions": {"ncu": ncu.version, "ncu_path": str(ncu.path), "python": platform.python_version(),
                     "torch": torch.__version__, "torch_cuda": torch.version.cuda, "triton": _version("triton"),
                     "nvtx": _version("nvtx"), "paretotune": _version("paretotune") or _source_version()},
        "setup": {"n_candidates": len(items), "numel": args.numel, "metrics": list(options.metrics),
                  "configs": [dict(i.params) for i in items],
                  "triton_compile_all_s_without_ncu": round(compile_s, 3)},
        "batch": {"wall_s": round(batch_s, 3), "per_candidate_s": round(per_candidate, 4),
                  "ncu_processes": len(batch.runs), "ok": sum(r.ok for r in batch.items),
                  "failed": {str(r.item.candidate_id): r.error for r in batch.items if not r.ok},
                  "ncu_command": list(batch.runs[0].argv) if batch.runs else []},
        "one_process_per_candidate": {
            "measured": len(singles), "mean_wall_s": round(single_mean, 3),
            "extrapolated_total_s": round(single_mean * len(items), 1),
            "note": f"measured {len(singles)} single-candidate ncu runs and extrapolated their mean to "
                    f"{len(items)} candidates",
            "runs": singles},
        "speedup_per_candidate": round(single_mean / per_candidate, 2) if per_candidate > 0 else None,
        "goal": {"per_candidate_s_max": 0.5, "speedup_min": 15.0,
                 "met": bool(per_candidate <= 0.5 and single_mean / per_candidate >= 15)},
        "workdir": str(workdir),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    summary = {"gpu": result["gpu"], "batch_wall_s": round(batch_s, 2), "per_candidate_s": round(per_candidate, 3),
               "batch_ok": f"{sum(r.ok for r in batch.items)}/{len(items)}",
               "single_process_mean_s": round(single_mean, 2), "speedup": result["speedup_per_candidate"],
               "goal_met": result["goal"]["met"], "out": str(args.out)}
    print(json.dumps(summary, indent=2))
    if batch.failed():
        print(f"warning: {len(batch.failed())} candidate(s) failed; see 'batch.failed' and {workdir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
