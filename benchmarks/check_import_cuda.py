"""Where the imports of a Helion campaign spend their seconds, and which of them initializes CUDA (run on a GPU
machine; on a CPU build of torch it says CUDA was never initialized).

On the H200 a Helion campaign spent 15.8-18.7 s importing its kernel (``kernel_import`` in run.json), and Helion's
import initializes CUDA there (``h200_fork_cuda.json``) but not on a CPU build of torch, so where it does could not
be traced off the GPU. In one fresh process this imports torch, Triton, Helion and then the kernel file, each
timed, and records the Python stack of the first CUDA initialization (``torch.cuda._lazy_init``) and of the first
CUDA device query (``torch.cuda.is_available`` / ``device_count``), with the module being imported at the time.

``--build`` then does what a build worker does with that workload kernel (paretotune's adapter, Helion patched as
paretotune patches it, then one Triton compile of the heuristic's config for the sm90 target, on the CPU) and
records the first call of each CUDA entry point again, apart: on a GPU host each build worker held a CUDA context
(528 MiB on an H100) though it never launches anything, and this says which call opened it.

    python benchmarks/check_import_cuda.py --out import_cuda.json \\
        [--kernel .workloads/helion-pretuned-sm90/rms_norm/rms_norm.py [--build]]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from common import versions, workload_campaign

STACK_FRAMES = 25


def watch(torch: Any, seen: dict[str, Any], during: dict[str, Any]) -> None:
    """Record the first call of each CUDA entry point named below, with its stack (no call is changed); the first
    during the build too, in ``during["build"]`` once the build phase sets it."""
    def wrap(owner: Any, name: str) -> None:
        real = getattr(owner, name)

        def first(*args: Any, **kwargs: Any) -> Any:
            records = [r for r in (seen, during.get("build")) if r is not None and name not in r]
            if records:
                call = {"at_s": round(time.perf_counter() - STARTED, 3),
                        "stack": traceback.format_stack(limit=STACK_FRAMES)[:-1]}
                for record in records:
                    record[name] = call
            return real(*args, **kwargs)
        setattr(owner, name, first)

    for name in ("_lazy_init", "is_available", "device_count", "get_device_capability", "get_device_properties",
                 "current_device"):
        if hasattr(torch.cuda, name):
            wrap(torch.cuda, name)


def timed_import(name: str, steps: dict[str, float], load: Any) -> Any:
    start = time.perf_counter()
    module = load()
    steps[name] = round(time.perf_counter() - start, 3)
    return module


STARTED = time.perf_counter()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--kernel", type=Path, help="a kernel file to import after Helion (timed)")
    parser.add_argument("--build", action="store_true",
                        help="then build the workload kernel --kernel names as a build worker does (traced apart)")
    args = parser.parse_args()
    if args.build and args.kernel is None:
        parser.error("--build needs --kernel (a workload kernel: .workloads/helion-pretuned-sm90/<name>/<name>.py)")
    steps: dict[str, float] = {}
    seen: dict[str, Any] = {}
    during: dict[str, Any] = {}
    torch = timed_import("torch", steps, lambda: __import__("torch"))
    watch(torch, seen, during)
    timed_import("triton", steps, lambda: __import__("triton"))
    timed_import("helion", steps, lambda: __import__("helion"))
    after_helion = {"cuda_initialized": bool(torch.cuda.is_initialized()), "first_calls": sorted(seen)}
    if args.kernel is not None:
        spec = importlib.util.spec_from_file_location("checked_kernel", args.kernel)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["checked_kernel"] = module
        timed_import("kernel", steps, lambda: spec.loader.exec_module(module))  # type: ignore[union-attr]
    build = None
    if args.build:
        before = bool(torch.cuda.is_initialized())
        during["build"] = {}
        timed_import("build", steps, lambda: build_as_worker(args.kernel, args.out.parent))
        build = {"cuda_initialized_before": before, "cuda_initialized_after": bool(torch.cuda.is_initialized()),
                 "first_calls": during.pop("build")}
    result = {"command": " ".join([sys.executable, *sys.argv]), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                      time.gmtime()),
              "versions": versions(), "import_s": steps, "after_helion": after_helion,
              "cuda_initialized_at_end": bool(torch.cuda.is_initialized()), "first_calls": seen, "build": build}
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: result[k] for k in ("import_s", "after_helion", "cuda_initialized_at_end")}))
    for name, call in seen.items():
        print(f"first {name} at {call['at_s']} s, from:\n" + "".join(call["stack"][-8:]))
    for name, call in (build or {}).get("first_calls", {}).items():
        print(f"build: first {name} at {call['at_s']} s, from:\n" + "".join(call["stack"][-8:]))
    return 0


def build_as_worker(kernel: Path, folder: Path) -> None:
    """What a build worker does for a campaign of this workload kernel: Helion imported as the workers import it
    (patched), paretotune's adapter, then Triton's compile of the heuristic's config for the campaign's target, through
    the ptxas paretotune found. No launch, no tensor on the GPU."""
    from paretotune.campaign.resolve import make_adapter
    from paretotune.campaign.trial_import import preload_helion
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    export_for_triton(find_ptxas())
    preload_helion()  # as a worker has it before the kernel file: Helion through paretotune's door, patched
    campaign = workload_campaign(kernel.resolve(), kernel.parent.name, folder)
    adapter = make_adapter(campaign)
    first = campaign.shapes[0]
    adapter.precompile(adapter.default_config(first), first, None, campaign.target)


if __name__ == "__main__":
    sys.exit(main())
