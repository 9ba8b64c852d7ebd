"""The fork server that the CPU build workers and the GPU worker start from, and what it imports first.

A process forked from the server starts with the server's modules imported: torch, Triton and Helion take
seconds to import in every process otherwise, and a pool restarted after a ptxas hang pays that again for each
worker. The server must never touch CUDA: a process forked after CUDA was initialized, or after the driver was
only asked how many devices there are, fails on its first CUDA call ("Cannot re-initialize CUDA in forked
subprocess").

Helion's import asks: ``torch._inductor`` calls ``torch.cuda.is_available()`` at import time, which asks the
driver (``benchmarks/check_fork_cuda.py``). With torch's NVML check (``PYTORCH_NVML_BASED_CUDA_CHECK=1``) it asks
NVML instead, and the children of a server that imported Helion can use CUDA (on an H200:
``benchmarks/results/import_cuda_h200/fork_cuda.json``). So the server preloads Helion with a CPU build of
torch, or where that check is on and NVML answers; a Helion campaign turns the check on in its process unless its
user set the variable (``=0`` keeps Helion out of the server: each worker imports it, as before).
"""
from __future__ import annotations

import multiprocessing
import os
import sys

from paretotune.compat.torch import NVML_CHECK, availability_check_is_fork_safe

# Seconds to import; preloaded when this process has imported them (torch promises a fork-safe import)
HEAVY_MODULES = ("torch", "triton")
HELION = "helion"  # preloaded only where its import cannot break CUDA in the children (module docstring)
PRELOAD = ("paretotune.campaign.resolve", "paretotune.build.static_job")

_helion_asked = False  # a Helion campaign's workers start from this process's one fork server


def preload_modules() -> list[str]:
    """What the server imports before it forks: the heavy modules this process has imported, Helion where a
    Helion campaign asked for it (or this process has it) and it is fork-safe, then paretotune's worker code."""
    heavy = [m for m in HEAVY_MODULES if m in sys.modules]
    if (_helion_asked or HELION in sys.modules) and availability_check_is_fork_safe():
        heavy.append(HELION)
    return heavy + list(PRELOAD)


def worker_context(helion: bool = False) -> multiprocessing.context.BaseContext:
    """The fork server (with :func:`preload_modules`) where the platform has one, else spawn. ``helion``: the
    campaign's kernel is a Helion kernel, so the server should import Helion too; it turns torch's NVML check on
    in this process (unless set), and stays asked for (a process starts one server; its preload list is the one
    set when it starts, so every later call must ask for the same)."""
    global _helion_asked
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    if helion:
        _helion_asked = True
        os.environ.setdefault(NVML_CHECK, "1")  # before the server starts: it takes this environment
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(preload_modules())
    return ctx
