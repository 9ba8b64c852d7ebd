"""Issue 31: where a captured program's extra time goes, measured in one process so that nothing but the capture
differs between the arms.

The H200 call B1 (2026-12-02) measured a Liger-Kernel training step 41 % slower under ``paretotune capture``
(10.2 -> 14.3 ms, each in its own process), while the recorder's CPU cost per call is 14-34 us
(``bench_capture_calls.py``) and the step makes about 26 kernel calls: some 1 ms. This benchmark takes the
capture apart. One process builds the program's step once; then, round after round, it runs one timed step
(``--block`` iterations) under each arm in turn, the order rotated every round, the capture installed just
before the arm's step and removed after it:

- ``plain``: no capture;
- ``patched``: the capture's patches and Triton launch hooks installed, every call handed straight to the
  kernel (what the patched ``run``/``__call__`` and Triton's hooked launch path cost);
- ``no_events``: the recorder's own work (signature keys, counts, the first call's description) with its launch
  hooks doing nothing (no CUDA events);
- ``sampled``: the recorder as ``paretotune capture`` runs it (events around each launch of a sampled call);
- ``all``: every call timed (``--timing all``).

Each arm keeps its recorder across rounds (its first calls, which synchronize, fall in the ``--warmup`` rounds
left out). Per arm: median step time, and the median over rounds of step / plain step of the same round with a
bootstrap CI (``scipy.stats.bootstrap``). Programs: ``benchmarks/programs/liger_llama_step.py`` (needs
Liger-Kernel) and ``launch_loop.py`` (the tests' own kernels; needs ``tests/capture/programs/lib`` on
PYTHONPATH, as ``gpu_session.sh``'s ``ablation`` step sets it).

    python benchmarks/bench_capture_ablation.py --program liger --out $OUT/ablation_liger.json
    PYTHONPATH=tests/capture/programs/lib:$PYTHONPATH python benchmarks/bench_capture_ablation.py --program loop \
        --out $OUT/ablation_loop.json

On a CPU (``TRITON_INTERPRET=1``, ``--smoke``: tiny sizes, a few rounds) it checks that the arms run.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.util
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from paretotune.capturing import hooks
from paretotune.capturing.recorder import Recorder

PROGRAM_DIR = Path(__file__).resolve().parent / "programs"

ARMS = ("plain", "patched", "no_events", "sampled", "all")
PROGRAMS = {  # --program -> (module in benchmarks/programs, its arguments on a GPU, on a CPU smoke)
    "liger": ("liger_llama_step", [], ["--batch", "1", "--seq", "16", "--hidden", "64", "--heads", "2",
                                        "--intermediate", "128", "--vocab", "256"]),
    "loop": ("launch_loop", [], ["--n", "4096", "--rows", "16"]),
}


class PassThrough(Recorder):
    """Every call straight to the kernel, the launch hooks empty: the patches' own cost."""

    def triton_run(self, obj: Any, orig: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                   launch_level: bool) -> Any:
        return orig(obj, *args, **kwargs)

    def helion_call(self, obj: Any, orig: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return orig(obj, *args, **kwargs)

    def launch_enter(self, *args: Any, **kwargs: Any) -> None:
        return None

    def launch_exit(self, *args: Any, **kwargs: Any) -> None:
        return None


class NoEvents(Recorder):
    """The recorder's bookkeeping with launch hooks that record no CUDA event."""

    def launch_enter(self, *args: Any, **kwargs: Any) -> None:
        return None

    def launch_exit(self, *args: Any, **kwargs: Any) -> None:
        return None


def recorders() -> dict[str, Recorder | None]:
    return {"plain": None, "patched": PassThrough(), "no_events": NoEvents(), "sampled": Recorder(timing="sampled"),
            "all": Recorder(timing="all")}


def ratio_ci(ratios: list[float]) -> tuple[float, float]:
    """95 % bootstrap CI of the median ratio (scipy's BCa; percentile where BCa is degenerate)."""
    if len(ratios) < 3 or len(set(ratios)) < 2:
        return (min(ratios), max(ratios)) if ratios else (float("nan"), float("nan"))
    from scipy.stats import bootstrap

    try:
        ci = bootstrap((ratios,), statistics.median, n_resamples=2000, random_state=0).confidence_interval
    except Exception:  # noqa: BLE001 - BCa fails on some degenerate samples
        ci = bootstrap((ratios,), statistics.median, n_resamples=2000, random_state=0,
                       method="percentile").confidence_interval
    return float(ci.low), float(ci.high)


def load_program(name: str) -> Any:
    """A program of ``benchmarks/programs/``, loaded from its file (the programs are inputs, not importable
    modules); what it imports itself must be on PYTHONPATH."""
    spec = importlib.util.spec_from_file_location(f"program_{name}", PROGRAM_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--program", choices=sorted(PROGRAMS), default="liger")
    ap.add_argument("--rounds", type=int, default=40, help="timed rounds (each: one step per arm)")
    ap.add_argument("--warmup", type=int, default=3, help="rounds left out (compiles, first calls)")
    ap.add_argument("--block", type=int, default=0, help="iterations per timed step (default: liger 1, loop 50)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--smoke", action="store_true", help="CPU: tiny sizes (run under TRITON_INTERPRET=1)")
    args, rest = ap.parse_known_args()
    import torch

    module_name, gpu_args, smoke_args = PROGRAMS[args.program]
    program = load_program(module_name)
    program_args = program.parser().parse_args([*(smoke_args if args.smoke else gpu_args), *rest])
    step = program.make_step(program_args)
    block = args.block or (1 if args.program == "liger" else 50)
    cuda = torch.cuda.is_available()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    arms = recorders()
    times: dict[str, list[float]] = {a: [] for a in ARMS}
    for r in range(args.warmup + args.rounds):
        order = ARMS[r % len(ARMS):] + ARMS[:r % len(ARMS)]
        for arm in order:
            recorder = arms[arm]
            if recorder is not None:
                hooks.install(recorder)
            try:
                sync()
                start = time.perf_counter()
                for _ in range(block):
                    step()
                sync()
                elapsed = (time.perf_counter() - start) * 1e3 / block
            finally:
                if recorder is not None:
                    hooks.uninstall()
            if r >= args.warmup:
                times[arm].append(elapsed)
    doc: dict[str, Any] = {
        "what": "bench_capture_ablation", "program": args.program, "program_args": vars(program_args),
        "command": " ".join([sys.executable, *sys.argv]), "date": datetime.datetime.now(datetime.UTC).isoformat(),
        "host": platform.node(), "gpu": torch.cuda.get_device_name() if cuda else None,
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "triton": importlib.import_module("triton").__version__},
        "rounds": args.rounds, "warmup_rounds": args.warmup, "iterations_per_step": block, "arms": {}}
    for arm in ARMS:
        ratios = [t / p for t, p in zip(times[arm], times["plain"])]
        low, high = ratio_ci(ratios)
        row: dict[str, Any] = {"median_ms": statistics.median(times[arm]), "step_ms": times[arm],
                               "ratio_to_plain": statistics.median(ratios), "ratio_ci95": [low, high]}
        recorder = arms[arm]
        if isinstance(recorder, Recorder) and not isinstance(recorder, PassThrough):
            kernels = recorder.document()["kernels"]
            row["calls"] = sum(k["calls"] for k in kernels)
            row["timed_calls"] = sum(k["timed_calls"] for k in kernels)
            row["kernels"] = len(kernels)
        doc["arms"][arm] = row
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1))
    print(f"{args.program}: {args.rounds} rounds of {block} iteration(s), medians (ratio to plain, 95 % CI):")
    for arm, row in doc["arms"].items():
        extra = f"  calls {row['calls']}, timed {row['timed_calls']}" if "calls" in row else ""
        print(f"  {arm:10s} {row['median_ms']:9.3f} ms  {row['ratio_to_plain']:.4f}x "
              f"[{row['ratio_ci95'][0]:.4f}, {row['ratio_ci95'][1]:.4f}]{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
