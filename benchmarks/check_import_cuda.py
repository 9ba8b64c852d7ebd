"""Where the imports of a Helion campaign spend their seconds, and which of them initializes CUDA (run on a GPU
machine; on a CPU build of torch it says CUDA was never initialized).

On the H200 a Helion campaign spent 15.8-18.7 s importing its kernel (``kernel_import`` in run.json), and Helion's
import initializes CUDA there (``h200_fork_cuda.json``) but not on a CPU build of torch, so where it does could not
be traced off the GPU. In one fresh process this imports torch, Triton, Helion and then the kernel file, each
timed, and records the Python stack of the first CUDA initialization (``torch.cuda._lazy_init``) and of the first
CUDA device query (``torch.cuda.is_available`` / ``device_count``), with the module being imported at the time.

    python benchmarks/check_import_cuda.py --out import_cuda.json \\
        [--kernel .workloads/helion-pretuned-sm90/rms_norm/rms_norm.py]
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

from common import versions

STACK_FRAMES = 25


def watch(torch: Any, seen: dict[str, Any]) -> None:
    """Record the first call of each CUDA entry point named below, with its stack (no call is changed)."""
    def wrap(owner: Any, name: str) -> None:
        real = getattr(owner, name)

        def first(*args: Any, **kwargs: Any) -> Any:
            if name not in seen:
                seen[name] = {"at_s": round(time.perf_counter() - STARTED, 3),
                              "stack": traceback.format_stack(limit=STACK_FRAMES)[:-1]}
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
    args = parser.parse_args()
    steps: dict[str, float] = {}
    seen: dict[str, Any] = {}
    torch = timed_import("torch", steps, lambda: __import__("torch"))
    watch(torch, seen)
    timed_import("triton", steps, lambda: __import__("triton"))
    timed_import("helion", steps, lambda: __import__("helion"))
    after_helion = {"cuda_initialized": bool(torch.cuda.is_initialized()), "first_calls": sorted(seen)}
    if args.kernel is not None:
        spec = importlib.util.spec_from_file_location("checked_kernel", args.kernel)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["checked_kernel"] = module
        timed_import("kernel", steps, lambda: spec.loader.exec_module(module))  # type: ignore[union-attr]
    result = {"command": " ".join([sys.executable, *sys.argv]), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                      time.gmtime()),
              "versions": versions(), "import_s": steps, "after_helion": after_helion,
              "cuda_initialized_at_end": bool(torch.cuda.is_initialized()), "first_calls": seen}
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: result[k] for k in ("import_s", "after_helion", "cuda_initialized_at_end")}))
    for name, call in seen.items():
        print(f"first {name} at {call['at_s']} s, from:\n" + "".join(call["stack"][-8:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
