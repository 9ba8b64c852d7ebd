"""Which imports leave a fork server unable to give CUDA to its children? (run on a GPU machine)

For each preload list, a fork server imports the modules, forks a child, and the child initializes CUDA.
paretotune's CPU pool preloads only modules that pass here (paretotune/build/pool.py, HEAVY_MODULES).
Usage: python benchmarks/check_fork_cuda.py --out fork_cuda.json [--helion-only]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"


def child_inits_cuda() -> str:
    import torch

    try:
        torch.cuda.init()
        return f"ok ({torch.cuda.get_device_name(0)})"
    except Exception as exc:  # noqa: BLE001 - the answer
        return f"{type(exc).__name__}: {str(exc).splitlines()[0]}"


def probe(preload: list[str], extra_env: dict[str, str] | None = None) -> str:
    """One fresh interpreter per list: a process starts only one fork server. ``extra_env`` is set for the fork
    server (and so its children) before it imports anything."""
    import subprocess

    code = ("import multiprocessing as mp; from check_fork_cuda import "
            f"child_inits_cuda\nif __name__ == '__main__':\n ctx = mp.get_context('forkserver'); "
            f"ctx.set_forkserver_preload({preload!r})\n with ctx.Pool(1) as p: print(p.apply(child_inits_cuda))")
    # the child finds this file by PYTHONPATH (the fork server's children unpickle child_inits_cuda by its name)
    env = {**os.environ, **(extra_env or {}),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300,
                         env=env)
    return (out.stdout.strip().splitlines() or [out.stderr.strip()[-300:]])[-1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--helion-only", action="store_true",
                        help="only the Helion preloads, with and without the NVML device check (seconds, not a minute)")
    args = parser.parse_args()
    lists = [["torch"], ["torch", "triton"], ["torch", "triton", "helion"], ["torch", "helion"]]
    if args.helion_only:
        lists = [["torch", "triton", "helion"]]
    by_preload = {",".join(p): probe(p) for p in lists}
    # torch.cuda.is_available() asks the CUDA driver, and that alone forbids CUDA to every later fork, unless torch
    # is told to ask NVML instead: does that let a fork server preload Helion?
    by_preload[f"torch,triton,helion with {NVML_CHECK}=1"] = probe(["torch", "triton", "helion"], {NVML_CHECK: "1"})
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": sys.version.split()[0],
              "start_methods": multiprocessing.get_all_start_methods(),
              "child_cuda_init_by_preload": by_preload}
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
