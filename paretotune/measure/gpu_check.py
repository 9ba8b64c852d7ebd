"""Say before any work, in one line, that a command needs a CUDA GPU when none is visible.

Without this, a runtime campaign on a CPU machine fails deep inside torch ("Cannot get CUDA generator
without ATen_cuda library") after the run directory exists. The check never initializes CUDA in this
process (its workers fork from it): it reads torch's build, ``CUDA_VISIBLE_DEVICES`` and the device nodes.
The one check of its kind: ``run``, ``resume``, ``validate``, the API and ``prepare_run`` all call it.
"""
from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from typing import Any

from paretotune.errors import UserError

GPU_STAGES = ("runtime", "ncu")  # objective stages measured on a GPU


def gpu_problem() -> str | None:
    """Why no CUDA GPU is visible to this process, or None when one may be."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU-only build"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU"
    if not glob.glob("/dev/nvidia[0-9]*") and not os.environ.get("PARETOTUNE_ASSUME_GPU"):
        return "no NVIDIA device is present (/dev/nvidia*)"
    return None


STATIC_INSTEAD = ("on a CPU machine use static objectives (registers, spill_bytes, shared_memory, "
                  "theoretical_occupancy, compile_time)")
STATIC_NOTE = ("outputs not checked: a static campaign builds every candidate but runs none (its objectives come "
               "from the build); a runtime campaign on a GPU checks each candidate's output before timing it")


def require_gpu(what: str, verb: str = "needs", instead: str = STATIC_INSTEAD) -> None:
    """Raise a one-line UserError when ``what`` needs a GPU and none is visible; ``instead``: what to do."""
    problem = gpu_problem()
    if problem is not None:
        raise UserError(f"{what} {verb} a CUDA GPU, but {problem}; {instead}")


def measures_on_gpu(objectives: Iterable[Any]) -> bool:
    """Whether any of ``objectives`` (objects with a ``stage``) is measured on a GPU."""
    return any(o.stage in GPU_STAGES for o in objectives)


def require_gpu_for(objectives: Iterable[Any], where: str, *, backend: str = "local") -> None:
    """Refuse a campaign whose objectives are measured on a GPU when none is visible here. Only the local
    backend measures on this machine (Ray may have GPUs elsewhere: not checked)."""
    needing = [o.label for o in objectives if o.stage in GPU_STAGES]
    if needing and backend == "local":
        require_gpu(f"{where}: {', '.join(needing)}", "needs" if len(needing) == 1 else "need")
