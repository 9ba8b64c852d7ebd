"""Which clock holds when the host is busy: configs of pretuned rms_norm timed idle and beside CPU burners.

A tuner's ranking is only as good as its clock. Each config's speedup over the kernel's own heuristic config
(the pretuned sm90 heuristic: the baseline) is measured, in interleaved rounds on one set of timing buffers, by:

- ``events``: ``triton.testing.do_bench`` (an event pair around each launch, L2 flushed): host time enters;
- ``cudagraph``: replays of a CUDA graph of the call (warm L2, launches back to back);
- ``cupti``: each call's kernel time as CUPTI records it (torch.profiler), L2 flushed;
- ``search``: the clock the search and validation pick for the shape (``evaluation.timing: auto``), by the same
  code they run (``paretotune.measure.arms.open_shape``);

first with the host idle, then with ``--burners`` processes spinning on the CPU (as the build workers load it
during a search). Host cost per call (``paretotune.measure.timing.host_cost``) is recorded beside, idle and
loaded. Writes OUT/clock_under_load.json: per clock, each config's median speedup idle and loaded and
``max_speedup_change_pct`` (the largest change of any config's speedup between idle and loaded).

The configs: the heuristic's, and every distinct config earlier time-to-quality runs re-timed for the kernel
(``benchmarks/results/**/ttq.json``), or those of ``--configs FILE`` (a JSON list of config dicts).

    python benchmarks/bench_clock_under_load.py --out OUT                 # on the GPU machine, ~2 min
    python benchmarks/bench_clock_under_load.py --out /tmp/clock --check  # any machine: configs and kernel load
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / ".workloads" / "helion-pretuned-sm90" / "rms_norm" / "rms_norm.py"  # never committed
SHAPE = {"M": 4096, "N": 4096, "dtype": "bfloat16"}
CLOCKS = ("events", "cudagraph", "cupti", "search")
BURN = "import time\nend = time.time() + {s}\nwhile time.time() < end:\n    sum(i * i for i in range(1000))\n"


def campaign_text(kernel: Path) -> str:
    shape = ", ".join(f"{k}: {json.dumps(v)}" for k, v in SHAPE.items())
    return (f"name: clock-under-load\nkernel:\n  source: {json.dumps(f'{kernel}:rms_norm')}\n"
            f"  inputs: paretotune.kernels.workloads:rms_norm\nshapes:\n  - {{name: s, {shape}}}\n"
            "objectives: [runtime]\n")


def recorded_configs(kernel_name: str = "pretuned_rms_norm") -> list[dict[str, Any]]:
    """Every distinct config that earlier time-to-quality runs re-timed for the kernel, in file order."""
    seen: dict[str, dict[str, Any]] = {}
    for path in sorted((ROOT / "benchmarks" / "results").glob("**/ttq.json")):
        record = json.loads(path.read_text()).get("kernels", {}).get(kernel_name) or {}
        for cand in (record.get("retime") or {}).get("candidates", []):
            if cand.get("config"):
                seen.setdefault(json.dumps(cand["config"], sort_keys=True), cand["config"])
    return list(seen.values())


def burners(n: int, seconds: float) -> list[subprocess.Popen[bytes]]:
    """``n`` processes that keep a CPU busy for ``seconds`` (ended by the caller sooner)."""
    return [subprocess.Popen([sys.executable, "-c", BURN.format(s=seconds)]) for _ in range(n)]


def measure(arms: Any, bound: dict[str, Any], rounds: int, warmup_ms: float, rep_ms: float,
            seed: int) -> dict[str, Any]:
    """Per clock, per config: the median over rounds of baseline / config time (each round's own baseline
    timing, taken in the same shuffled round); host cost per call per config."""
    from paretotune.measure.timing import HOST, gpu_timer

    timer = gpu_timer(warmup_ms, rep_ms)
    rng = random.Random(seed)
    methods = {"events": "events", "cudagraph": "cudagraph", "cupti": "cupti", "search": arms.method}
    failed: dict[str, str] = {}
    for clock in CLOCKS:  # a clock that cannot time this call is recorded as such; the others still run
        try:
            arms.time(bound["heuristic"], timer, methods[clock])
        except Exception as exc:  # noqa: BLE001 - the clock's failure is a result
            failed[clock] = f"{type(exc).__name__}: {exc}"[:300]
    clocks = [c for c in CLOCKS if c not in failed]
    times: dict[str, dict[str, list[float]]] = {c: {k: [] for k in bound} for c in clocks}
    host: dict[str, list[float]] = {k: [] for k in bound}
    for _ in range(rounds):
        order = list(bound)
        rng.shuffle(order)
        for key in order:
            for clock in clocks:
                times[clock][key].append(arms.time(bound[key], timer, methods[clock]).median_ms)
            host[key].append(arms.time(bound[key], timer, HOST).median_ms)
    out: dict[str, Any] = {"failed": failed}
    for clock in clocks:
        base = times[clock]["heuristic"]
        out[clock] = {key: {"median_ms": statistics.median(ts),
                            "speedup": statistics.median(b / t for b, t in zip(base, ts, strict=True)),
                            "spread_pct": 100 * (max(ts) - min(ts)) / statistics.median(ts)}
                      for key, ts in times[clock].items()}
    out["host_ms"] = {key: statistics.median(v) for key, v in host.items()}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--kernel", type=Path, default=KERNEL, help="pretuned rms_norm.py (with its sm90 heuristic)")
    ap.add_argument("--configs", type=Path, help="JSON list of config dicts (default: the recorded ttq winners)")
    ap.add_argument("--burners", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup-ms", type=float, default=25.0)
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument("--check", action="store_true", help="no GPU: load the kernel and the configs, time nothing")
    args = ap.parse_args()
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter

    configs = json.loads(args.configs.read_text()) if args.configs else recorded_configs()
    campaign = campaign_from_text(campaign_text(args.kernel.resolve()), args.out / "campaign.yaml")
    adapter = make_adapter(campaign)
    shape = campaign.shapes[0]
    heuristic = adapter.default_config(shape)
    others = [c for c in configs if c != heuristic]
    args.out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "host": platform.node(), "cpus": os.cpu_count(), "kernel": str(args.kernel), "shape": SHAPE,
        "burners": args.burners, "rounds": args.rounds, "warmup_ms": args.warmup_ms, "rep_ms": args.rep_ms,
        "configs": {"heuristic": heuristic, **{f"c{i}": c for i, c in enumerate(others, 1)}}}
    if args.check:
        result["check"] = f"{1 + len(others)} configs, kernel loaded, nothing timed"
        (args.out / "clock_under_load.json").write_text(json.dumps(result, indent=1))
        print(result["check"])
        return 0
    import torch

    from paretotune.measure.arms import open_shape
    from paretotune.measure.timing import gpu_timer

    result["versions"] = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}
    arms = open_shape(adapter, shape, "cuda:0", 12345, "auto", gpu_timer(args.warmup_ms, args.rep_ms))
    result["search_clock"] = {"method": arms.method, "source": arms.method_source,
                              "authors_method": arms.authors_method}
    bound = {"heuristic": arms.baseline, **{key: arms.bind(c, None) for key, c in result["configs"].items()
                                            if key != "heuristic"}}
    result["idle_load"] = os.getloadavg()
    idle = measure(arms, bound, args.rounds, args.warmup_ms, args.rep_ms, seed=1)
    procs = burners(args.burners, 600)
    try:
        time.sleep(2.0)
        result["loaded_load_before"] = os.getloadavg()
        loaded = measure(arms, bound, args.rounds, args.warmup_ms, args.rep_ms, seed=2)
        result["loaded_load_after"] = os.getloadavg()
    finally:
        for p in procs:
            p.kill()
    result["clocks"] = {clock: {"error": why} for clock, why in {**idle["failed"], **loaded["failed"]}.items()}
    for clock in (c for c in CLOCKS if c not in result["clocks"]):
        changes = {k: 100 * abs(loaded[clock][k]["speedup"] - idle[clock][k]["speedup"]) / idle[clock][k]["speedup"]
                   for k in bound}
        result["clocks"][clock] = {"idle": idle[clock], "loaded": loaded[clock],
                                   "speedup_change_pct": changes, "max_speedup_change_pct": max(changes.values())}
    result["host_ms"] = {"idle": idle["host_ms"], "loaded": loaded["host_ms"]}
    (args.out / "clock_under_load.json").write_text(json.dumps(result, indent=1))
    for clock in CLOCKS:
        c = result["clocks"][clock]
        if "error" in c:
            print(f"{clock:10s} could not time the call: {c['error']}")
            continue
        print(f"{clock:10s} max speedup change {c['max_speedup_change_pct']:6.2f} %  heuristic idle "
              f"{c['idle']['heuristic']['median_ms'] * 1000:.1f} us, "
              f"loaded {c['loaded']['heuristic']['median_ms'] * 1000:.1f} us")
    print(f"search clock: {arms.method} ({arms.method_source})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
