"""The fork server that the CPU build workers and the GPU worker start from, and what it imports first.

A process forked from the server starts with the server's modules imported: torch, Triton and Helion take
seconds to import in every process otherwise, and a pool restarted after a ptxas hang pays that again for each
worker. A campaign starts the server first (:func:`start_early`), so its imports overlap the campaign process's
own. The server must never touch CUDA: a process forked after CUDA was initialized, or after the driver was only
asked how many devices there are, fails on its first CUDA call ("Cannot re-initialize CUDA in forked
subprocess").

Helion's import asks: ``torch._inductor`` calls ``torch.cuda.is_available()`` at import time, which asks the
driver (``benchmarks/check_fork_cuda.py``). With torch's NVML check (``PYTORCH_NVML_BASED_CUDA_CHECK=1``) it asks
NVML instead, and the children of a server that imported Helion can use CUDA (on an H200:
``benchmarks/results/import_cuda_h200/fork_cuda.json``). So for a Helion campaign the server imports
:mod:`.helion_preload`, which imports Helion with a CPU build of torch, or where that check is on and NVML
answers; a Helion campaign turns the check on in its process unless its user set the variable (``=0`` keeps
Helion out of the server: each worker imports it, as before).
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
import sys

from paretotune.compat.torch import NVML_CHECK

HEAVY_MODULES = ("torch", "triton")  # seconds each; every kernel adapter needs both (torch's import is fork-safe)
HELION = "helion"
HELION_PRELOAD = "paretotune.build.helion_preload"  # imports Helion where that is fork-safe (module docstring)
PRELOAD = ("paretotune.campaign.resolve", "paretotune.build.static_job")

_helion_asked = False  # a Helion campaign's workers start from this process's one fork server


def preload_modules() -> list[str]:
    """What the server imports before it forks: torch and Triton, Helion where a Helion campaign asked for it (or
    this process has it) and its import is fork-safe there (:mod:`.helion_preload`), then paretotune's worker code."""
    helion = [HELION_PRELOAD] if _helion_asked or HELION in sys.modules else []
    return [*HEAVY_MODULES, *helion, *PRELOAD]


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


def start_early(helion: bool) -> None:
    """Start this process's fork server now (a fork and an exec: milliseconds) rather than at the first worker's
    start: it imports torch, Triton and, for a Helion campaign, Helion while this process checks the campaign and
    imports them itself (on a GPU host, seconds each: torch 6.3 s, Helion 14.5 s in a fresh process on an H200)."""
    if worker_context(helion).get_start_method() == "forkserver":
        multiprocessing.forkserver.ensure_running()
