"""The Ray backend on every GPU of a machine versus the local backend on one GPU, on the same runtime campaign.

    python benchmarks/bench_ray_gpus.py --out benchmarks/results/ray_gpus_h200x2.json
        [--config configs/shared_acf_softmax.yaml] [--generations G] [--pool-size P] [--workers W] [--rep-ms R]
        [--gpus N] [--keep-runs DIR]

Each backend runs the campaign in its own process (a fresh interpreter, so neither inherits warm imports):
1. ``local``: ``execution.backend: local`` with ``CUDA_VISIBLE_DEVICES`` set to the first GPU;
2. ``ray``: ``execution.backend: ray`` over all (or ``--gpus``) GPUs, on a fresh local Ray instance limited to
   ``evaluation.workers`` CPUs (connected before the campaign starts, so its start-up is timed on its own).
Both use the same campaign copy (the overrides apply to both). Recorded per run: wall time of the campaign
loop, time to the first and to the baseline record, Ray start-up, candidates evaluated/failed, candidates per
second, and for the Ray run the candidates measured per GPU actor (``extra.ray`` of each record) with each
actor's summed measurement time; plus the command, GPUs (nvidia-smi), package versions and date.

CompileIQ takes no seed, so the two runs evaluate different candidates: compare throughput, not fronts (the
test suite checks that both backends give identical results for identical candidates). With the shipped
config the measurement stage is short (~0.3 s per candidate on an H200), so fixed start-up costs weigh a lot;
``--rep-ms`` and ``--generations`` make the GPU share larger. Needs ``ray`` (it comes with compileiq).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _gpus() -> list[dict[str, str]]:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,name,memory.total,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    rows = [[c.strip() for c in line.split(",")] for line in out.strip().splitlines() if line.strip()]
    return [dict(zip(("index", "name", "memory", "driver"), r, strict=False)) for r in rows]


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("torch", "triton", "ray", "compileiq", "helion", "nvidia-cuda-nvcc"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    import paretotune

    out["paretotune"] = paretotune.__version__
    return out


def _campaign_copy(args: argparse.Namespace, backend: str, workdir: Path) -> Path:
    data = yaml.safe_load(Path(args.config).read_text())
    search, evaluation = data.setdefault("search", {}), data.setdefault("evaluation", {})
    for key, value in (("generations", args.generations), ("pool_size", args.pool_size)):
        if value is not None:
            search[key] = value
    for key, value in (("workers", args.workers), ("rep_ms", args.rep_ms)):
        if value is not None:
            evaluation[key] = value
    data["execution"] = {"backend": backend, "address": "local"}
    data["name"] = f"{data.get('name', 'campaign')}-{backend}"
    kernel = data.get("kernel", {})
    source = kernel.get("source", "")
    if ".py:" in source and not Path(source.split(":")[0]).is_absolute():  # keep a relative kernel file resolvable
        kernel["source"] = str((Path(args.config).resolve().parent / source.split(":")[0]).resolve()) + ":" + \
            source.rsplit(":", 1)[1]
    path = workdir / f"{backend}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# -- child: one campaign in this process --------------------------------------------------------------------
def child(backend: str, campaign_path: Path, run_dir: Path, out: Path) -> None:
    from paretotune.campaign.load import load_campaign
    from paretotune.records import TrialRecord
    from paretotune.runner.loop import run_campaign
    from paretotune.runner.start import start_run
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    campaign = load_campaign(campaign_path)
    ptxas = find_ptxas()
    export_for_triton(ptxas)
    run = start_run(campaign, run_dir, ptxas, campaign.spec.seed)
    result: dict[str, Any] = {"backend": backend, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
    session = None
    if backend == "ray":
        import ray

        from paretotune.cluster.session import connect_ray

        t = time.perf_counter()
        session = connect_ray("local", local_cpus=campaign.spec.evaluation.workers)
        result["ray_start_s"] = time.perf_counter() - t
        result["ray_resources"] = {k: v for k, v in ray.cluster_resources().items() if k in ("CPU", "GPU")}
    stamps: list[tuple[float, int, str]] = []
    start = time.perf_counter()

    def stamp(rec: TrialRecord) -> None:
        stamps.append((time.perf_counter() - start, rec.candidate_id, rec.status))

    try:
        records = run_campaign(campaign, run, ptxas, on_record=stamp)
    finally:
        if session is not None:
            session.close()
    wall = time.perf_counter() - start
    per_gpu: Counter[str] = Counter()
    per_gpu_measure: defaultdict[str, float] = defaultdict(float)
    for rec in records:
        info = rec.extra.get("ray")
        if info:
            key = f"actor{info['gpu_worker']}:gpu{','.join(info.get('gpu_ids') or ['?'])}@{info.get('node', '?')}"
            per_gpu[key] += 1
            per_gpu_measure[key] += rec.measure_s
    baseline = next((s for s in stamps if s[1] == 0), None)
    result.update(
        campaign_wall_s=wall, candidates=len(records), failed=sum(r.status != "ok" for r in records),
        candidates_per_s=len(records) / wall if wall else None, first_record_s=stamps[0][0] if stamps else None,
        baseline_record_s=baseline[0] if baseline else None,
        search_wall_s=wall - baseline[0] if baseline else None,  # after the baseline: the part that scales
        sum_compile_s=sum(r.compile_s for r in records), sum_measure_s=sum(r.measure_s for r in records),
        per_gpu_candidates=dict(sorted(per_gpu.items())), per_gpu_measure_s=dict(sorted(per_gpu_measure.items())),
        errors=Counter(r.error.split(":")[0][:80] for r in records if r.status != "ok").most_common(5),
        run_dir=str(run_dir))
    out.write_text(json.dumps(result, indent=2))


# -- parent: both runs, then one JSON ---------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(ROOT / "configs" / "shared_acf_softmax.yaml"))
    ap.add_argument("--out", type=Path, default=HERE / "results" / "ray_gpus.json")
    ap.add_argument("--generations", type=int)
    ap.add_argument("--pool-size", type=int)
    ap.add_argument("--workers", type=int, help="CPU workers (both runs); default: the campaign's")
    ap.add_argument("--rep-ms", type=float, help="timing window per measurement (both runs)")
    ap.add_argument("--gpus", type=int, help="GPUs for the ray run (default: all visible)")
    ap.add_argument("--keep-runs", type=Path, help="keep both run directories here")
    ap.add_argument("--timeout", type=float, default=270.0,
                    help="seconds per run (both runs must fit a 10-minute device command)")
    ap.add_argument("--child", choices=("local", "ray"), help=argparse.SUPPRESS)
    ap.add_argument("--campaign", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--run-dir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.campaign, args.run_dir, args.out)
        return 0

    gpus = _gpus()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [g.strip() for g in visible.split(",") if g.strip()] if visible else [g["index"] for g in gpus]
    if args.gpus:
        ids = ids[: args.gpus]
    if not ids:
        print("warning: no GPU found; only a static campaign can run (useful to check this script)", file=sys.stderr)
    workdir = Path(tempfile.mkdtemp(prefix="bench-ray-gpus-"))
    runs_root = args.keep_runs or workdir
    runs: dict[str, Any] = {}
    for backend, devices in (("local", ids[:1]), ("ray", ids)):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        if devices:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(devices)
        cfg = _campaign_copy(args, backend, workdir)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", backend, "--campaign", str(cfg),
               "--run-dir", str(runs_root / backend), "--out", str(workdir / f"{backend}.json")]
        print(f"[bench_ray_gpus] {backend} on GPU(s) {devices or 'none'} ...", flush=True)
        t = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.timeout,
                                  check=False)
            rc, stderr = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc, stderr = "timeout", (exc.stderr or b"").decode(errors="replace") if isinstance(exc.stderr, bytes) \
                else (exc.stderr or "")
        wall = time.perf_counter() - t
        res = json.loads((workdir / f"{backend}.json").read_text()) if rc == 0 else {}
        res.update(process_wall_s=wall, returncode=rc, gpus_used=devices)
        if rc != 0:
            res["stderr_tail"] = stderr[-3000:]
        runs[backend] = res
        print(f"[bench_ray_gpus] {backend}: rc={rc} process {wall:.1f} s, campaign "
              f"{res.get('campaign_wall_s', float('nan')):.1f} s, per GPU {res.get('per_gpu_candidates')}", flush=True)
    loc, ray_ = runs["local"], runs["ray"]
    summary = {}
    for key in ("campaign_wall_s", "search_wall_s", "process_wall_s"):
        if loc.get(key) and ray_.get(key):
            summary[f"speedup_{key}"] = loc[key] / ray_[key]
    result = {
        "benchmark": "ray backend on all GPUs vs local backend on one GPU (same campaign copy)",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "host": platform.node(), "gpus": gpus, "versions": _versions(),
        "campaign": yaml.safe_load((workdir / "ray.yaml").read_text()),
        "runs": runs, "summary": summary,
        "note": "CompileIQ has no seed: the runs evaluate different candidates; compare throughput, not fronts.",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(json.dumps(summary, indent=2))
    print(f"wrote {args.out}")
    if not args.keep_runs:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all(r.get("returncode") == 0 for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
