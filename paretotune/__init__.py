"""paretotune: multi-objective Pareto search over GPU kernel configs and PTXAS Advanced Control Files.

The public API: :func:`run` a campaign (a YAML file or a dict; kernels may be given as objects), then read the
:class:`Run` (``results``, ``front()``, ``validate()``, ``report()``); :func:`capture` a program's kernel
calls into one campaign per kernel; :func:`shipped_acfs` applies shipped ACFs to a block's Triton builds.
:class:`TritonKernel` and :class:`HelionKernel` describe a kernel; :class:`UserError` is what bad input raises.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

# first, so that IMPORTED_AT is the time this process first imported paretotune (paretotune/version.py)
from paretotune.version import IMPORTED_AT, __version__  # noqa: F401 - public attributes of the package

__all__ = ["HelionKernel", "Run", "TritonKernel", "UserError", "capture", "open_run", "run", "shipped_acfs"]

if TYPE_CHECKING:
    from paretotune.api import Run, capture, open_run, run
    from paretotune.errors import UserError
    from paretotune.kernels.helion import HelionKernel
    from paretotune.kernels.triton import TritonKernel
    from paretotune.ship.shipped_acfs import shipped_acfs

_WHERE = {"Run": "paretotune.api", "run": "paretotune.api", "open_run": "paretotune.api", "capture": "paretotune.api",
          "UserError": "paretotune.errors", "TritonKernel": "paretotune.kernels.triton",
          "HelionKernel": "paretotune.kernels.helion", "shipped_acfs": "paretotune.ship.shipped_acfs"}


def __getattr__(name: str) -> Any:
    """Imported on first use: ``import paretotune`` stays cheap (workers and the CLI import it first)."""
    if name not in _WHERE:
        raise AttributeError(f"module 'paretotune' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_WHERE[name]), name)
