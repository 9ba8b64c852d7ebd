"""Evaluations to a known optimum over real Helion ConfigSpecs: the helion engine against today's joint (issue 29).

The question: does paretotune's config layer for Helion kernels (engine ``helion``: Helion's own search,
``LFBOTreeSearch`` by default, driven through ask/tell with the ACF as one more dimension) find a config that
Helion's ConfigSpec holds in fewer evaluations than today's ``joint`` (CompileIQ's evolutionary search over the
flattened knob lists, seeded at the baseline)? Random search is the floor.

Spaces: real ConfigSpecs, bound to meta tensors for sm_90 as a GPU campaign binds them (tensor descriptors on):
the project's ``scale_rows`` AOT kernel, the bundled Helion RMS norm as a bare kernel, and, when
``.workloads/helion-pretuned-sm90`` is materialised, Helion's pretuned ``rms_norm`` and ``softmax`` at their
time-to-quality shapes. The ACF dimension is a list of 8 ACFs plus none (the same list for every engine: a
finite list makes the optimum known; Helion never reads the files and the objective is synthetic).

Objective (synthetic, deterministic, smaller is better, optimum 1.0): a "runtime" that grows with the distance
from a target config in the knobs that matter most on real kernels, plus an ACF term:
``1 + |log2 block - log2 block*| + |log2 warps - log2 warps*| + 0.25 |stages - stages*| + 0.5 [acf != acf*]``,
where the target moves the baseline (the kernel's heuristic or Helion's default) two block-size steps, to
another warp count and stage count, and is accepted by Helion. Every other knob is free (irrelevant).

Loop: the steady schedule in miniature (10 candidates in flight, each told as it finishes, asked again after
every tell); an evaluation is a candidate handed out and told. Proposals the de-duplicating wrapper rejects
(combinations Helion refuses) cost no evaluation and are counted apart. Per (space, engine): ``--seeds`` runs;
the number of evaluations until the optimum is first evaluated (``None``: not within ``--budget``), the median
over runs, and the best objective at the budget. CompileIQ takes no seed, so its runs differ by design;
``engine_s`` is the CPU time the engine itself took per evaluation on this machine (not a GPU figure).

Run: ``CIQ_SEARCH_SPACES_DIR=/work/shared/compileiq python benchmarks/bench_config_search.py``
(writes benchmarks/results/config_search_cpu.json).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from common import cpu_model, load_average

from paretotune.campaign.user_code import import_object
from paretotune.kernels.helion import HelionAdapter, spec_from_kernel
from paretotune.kernels.helion_space import accepts, device_features
from paretotune.records import Shape
from paretotune.search.base import EngineOptions
from paretotune.search.dedupe import Deduplicated
from paretotune.search.registry import build_engine
from paretotune.search.space import SearchSpace
from paretotune.toolchain.acf_sources import AcfOption, finite_list
from paretotune.toolchain.arch import TARGETS

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "helion_aot"
WORKLOADS = ROOT / ".workloads" / "helion-pretuned-sm90"
ACFS = finite_list([AcfOption(name=f"acf{i}", data=f"synthetic-acf-{i}".encode() * 8) for i in range(8)])
BEST_ACF = ACFS[6].data
ENGINES = {  # name -> (engine, helion settings)
    "joint (compileiq)": ("compileiq", {}),
    "helion LFBOTreeSearch quick x1": ("helion", {"islands": 1, "effort": "quick"}),
    "helion LFBOTreeSearch quick x2": ("helion", {"islands": 2, "effort": "quick"}),
    "helion LFBOTreeSearch full x1": ("helion", {"islands": 1, "effort": "full"}),
    "random": ("random", {}),
}


def adapters() -> dict[str, HelionAdapter]:
    """Bare Helion kernels (their space is Helion's ConfigSpec), each for one shape, as a GPU campaign sees them."""
    out: dict[str, tuple[Any, Any, dict[str, Any]]] = {
        "scale_rows 512x4096 fp16": (import_object("scale_rows.py:scale_rows", FIXTURES, "bench"),
                                     import_object("scale_rows.py:inputs", FIXTURES, "bench"), {"M": 512, "N": 4096}),
    }
    from paretotune.kernels.bundled.helion_rms_norm import rms_norm

    out["bundled rms_norm 2048x4096 bf16"] = (rms_norm,
                                              import_object("bundled_fns.py:rms_norm_args", FIXTURES, "bench"),
                                              {"M": 2048, "N": 4096, "dtype": "bfloat16"})
    for name, dims in (("rms_norm", {"M": 4096, "N": 4096, "dtype": "bfloat16"}),
                       ("softmax", {"M": 4096, "N": 16384, "dtype": "float16"})):
        path = WORKLOADS / name / f"{name}.py"
        if path.is_file():
            out[f"pretuned {name} {dims['M']}x{dims['N']} {dims['dtype']}"] = (
                import_object(f"{path}:{name}", ROOT, "bench"),
                import_object(f"paretotune.kernels.workloads:{name}", ROOT, "bench"), dims)
    made = {}
    for label, (kernel, factory, dims) in out.items():
        adapter = HelionAdapter(label.split()[1] if label.startswith(("bundled", "pretuned")) else label.split()[0],
                                spec_from_kernel(kernel, factory))
        adapter.use_campaign((Shape(label="s", params=dims),), TARGETS["sm_90"], True)
        made[label] = adapter
    return made


def target(adapter: HelionAdapter, space: dict[str, list[Any]]) -> dict[str, Any]:
    """The optimum: the baseline moved in block size, warps and stages, to a config Helion accepts as it is."""
    shape = adapter._shapes[0]
    base = adapter.default_config(shape)
    spec = adapter.config_spec(shape)
    blocks = sorted({b[0] for b in space["block_sizes"] if len(b) == len(base["block_sizes"])})
    b0 = base["block_sizes"][0]
    ordered = sorted(blocks, key=lambda b: (abs(abs(math.log2(b) - math.log2(b0)) - 2), -b))
    warps = [w for w in (2, 8, 4, 16) if w != base["num_warps"] and w in space["num_warps"]]
    stages = [s for s in (3, 4, 2, 5) if s != base.get("num_stages") and s in space.get("num_stages", [s])]
    with device_features(True):
        for b in ordered:
            for w in warps:
                for s in stages:
                    config = {**base, "block_sizes": [b, *base["block_sizes"][1:]], "num_warps": w, "num_stages": s}
                    if b != b0 and accepts(spec, config):
                        return config
    raise RuntimeError(f"no accepted target near {base}")


def objective(goal: dict[str, Any]) -> Any:
    def f(config: dict[str, Any], acf: bytes | None) -> float:
        return (1.0 + abs(math.log2(config["block_sizes"][0]) - math.log2(goal["block_sizes"][0]))
                + abs(math.log2(config["num_warps"]) - math.log2(goal["num_warps"]))
                + 0.25 * abs(config.get("num_stages", 0) - goal.get("num_stages", 0))
                + (0.0 if acf == BEST_ACF else 0.5))
    return f


def run(adapter: HelionAdapter, engine: str, settings: dict[str, Any], seed: int, budget: int,
        window: int) -> dict[str, Any]:
    shape = adapter._shapes[0]
    knobs = adapter.space()
    goal = target(adapter, knobs)
    f = objective(goal)
    space = SearchSpace(knobs=knobs, acf="finite", acf_options=ACFS, constraint=adapter.constraint())
    base = adapter.default_config(shape)
    started = time.process_time()
    if engine == "helion":
        from paretotune.search import helion_search

        inner = helion_search.create(space, EngineOptions(n_objectives=1, pool_size=10, generations=10_000,
                                                          seed=seed, seed_config=base,
                                                          native=adapter.native_space(), settings=settings))
    else:
        inner = build_engine(engine, space, n_objectives=1, pool_size=10, generations=10_000, seed=seed,
                             seed_config=base)
    eng = Deduplicated(inner, constraint=space.constraint)
    eng.know_baseline(base, (f(base, None),))
    in_flight: list[Any] = []
    told, best, hit = 0, f(base, None), None
    trajectory = []
    while told < budget:
        while len(in_flight) < window:  # the steady loop's refill: ask until the window is full
            fresh = eng.ask()
            if not fresh:
                break
            in_flight += fresh
        if not in_flight:
            break
        p = in_flight.pop(0)
        value = f(p.config, p.acf)
        eng.tell({p.engine_id: (value,)})
        told += 1
        if value < best:
            best = value
            trajectory.append([told, round(value, 4)])
        if value == 1.0:
            hit = told
            break
    engine_s = time.process_time() - started
    close = getattr(inner, "close", None)
    if close:
        close()
    return {"seed": seed, "evals_to_optimum": hit, "evaluations": told, "best": best, "rejected": eng.rejected,
            "engine_cpu_s_per_eval": round(engine_s / max(told, 1), 4), "trajectory": trajectory,
            "baseline_value": f(base, None), "target": {k: goal[k] for k in ("block_sizes", "num_warps", "num_stages")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "config_search_cpu.json")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=400)
    parser.add_argument("--window", type=int, default=10)
    parser.add_argument("--spaces", default="all", help="comma list of space labels (substring match), or all")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--without-toward-default", action="store_true",
                        help="the A/B's other arm: the helion engine's first round seeds only the baseline, not the "
                             "configs toward Helion's default (paretotune/search/toward_default.py)")
    args = parser.parse_args()
    if args.without_toward_default:
        from paretotune.search import helion_search

        helion_search.toward_default = lambda tuned, default: []  # type: ignore[assignment]
    spaces = adapters()
    if args.spaces != "all":
        spaces = {k: v for k, v in spaces.items() if any(s in k for s in args.spaces.split(","))}
    result: dict[str, Any] = {
        "command": " ".join([sys.executable, *sys.argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": {d: version(d) for d in ("helion", "torch", "triton", "compileiq")}
        | {"python": platform.python_version()},
        "machine": {"cpu": cpu_model(), "load_average_1_5_15_min": load_average()},
        "budget": args.budget, "window": args.window, "seeds": args.seeds, "acf_list": len(ACFS) - 1,
        "toward_default_seeds": not args.without_toward_default,
        "spaces": {}}
    for label, adapter in spaces.items():
        entry: dict[str, Any] = {"runs": {}, "summary": {}}
        result["spaces"][label] = entry
        for name in args.engines.split(","):
            engine, settings = ENGINES[name]
            runs = [run(adapter, engine, settings, seed, args.budget, args.window) for seed in range(args.seeds)]
            entry["runs"][name] = runs
            hits = [r["evals_to_optimum"] for r in runs]
            reached = [h for h in hits if h is not None]
            entry["summary"][name] = {
                "evals_to_optimum": hits, "reached": f"{len(reached)}/{len(hits)}",
                "median_evals_to_optimum": statistics.median(h if h is not None else math.inf for h in hits),
                "best_at_budget": [r["best"] for r in runs], "rejected": [r["rejected"] for r in runs],
                "engine_cpu_s_per_eval": statistics.median(r["engine_cpu_s_per_eval"] for r in runs)}
            print(f"{label:34s} {name:32s} evals to optimum {hits} best {[round(r['best'], 3) for r in runs]}",
                  flush=True)
            args.out.write_text(json.dumps(result, indent=1, default=str))
    args.out.write_text(json.dumps(result, indent=1, default=str))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
