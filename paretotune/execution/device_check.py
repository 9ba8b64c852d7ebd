"""Refuse a campaign that needs a CUDA GPU on a machine without one, before its run directory is made.

Minimal on purpose (a fuller check may replace it): the campaign process must not initialize CUDA itself
(its workers fork from it), so this asks only what needs no driver call: whether torch was built with CUDA
and whether the NVIDIA device nodes exist.
"""
from __future__ import annotations

import glob
from collections.abc import Sequence
from typing import Any

from paretotune.errors import UserError


def cuda_missing() -> str | None:
    """Why this machine cannot run CUDA kernels, or None if it may."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU-only build"
    if not glob.glob("/dev/nvidia[0-9]*"):
        return "no NVIDIA GPU device (/dev/nvidia0, ...) on this machine"
    return None


def require_device(campaign: Any, objectives: Sequence[Any]) -> None:
    """A local campaign with an objective measured on the GPU needs a CUDA GPU here (Ray may have them
    elsewhere: it is not checked)."""
    gpu = sorted({o.name for o in objectives if getattr(o, "stage", "static") != "static"})
    if not gpu or campaign.spec.execution.backend != "local":
        return
    why = cuda_missing()
    if why is not None:
        raise UserError(f"{campaign.path}: objectives: {', '.join(gpu)} need{'s' if len(gpu) == 1 else ''} a "
                        f"CUDA GPU, but {why}")
