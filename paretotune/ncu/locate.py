"""Find the Nsight Compute binary and its version: ``$PARETOTUNE_NCU``, PATH, then the usual install places.

Its own module because finding the binary is a job of its own (an override, a search order, a version
probe) with its own tests; :mod:`paretotune.ncu.run` only runs batches under the binary found here.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from paretotune.ncu.errors import NcuNotFoundError

ENV_NCU = "PARETOTUNE_NCU"
_FALLBACK_PATHS = ("/usr/local/cuda/bin/ncu",)
_VERSION = re.compile(r"Version (\d[\w.]*)")


@dataclass(frozen=True)
class Ncu:
    """An ncu binary and the version it reports."""

    path: Path
    version: str  # "2025.3.1.0", or "unknown"


def ncu_version(path: Path) -> str:
    try:
        out = subprocess.run([str(path), "--version"], check=False, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NcuNotFoundError(f"{path}: cannot run ncu ({exc})") from None
    match = _VERSION.search(out.stdout + out.stderr)
    return match.group(1) if match else "unknown"


def find_ncu() -> Ncu:
    """Locate ncu: ``$PARETOTUNE_NCU``, then ``PATH``, ``/usr/local/cuda/bin/ncu``, ``/opt/nvidia/nsight-compute``."""
    override = os.environ.get(ENV_NCU)
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise NcuNotFoundError(f"${ENV_NCU}={override}: no such executable")
        return Ncu(path, ncu_version(path))
    opt = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))
    for candidate in (shutil.which("ncu"), *_FALLBACK_PATHS, *opt[-1:]):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return Ncu(Path(candidate), ncu_version(Path(candidate)))
    raise NcuNotFoundError("Nsight Compute (ncu) not found on PATH, in /usr/local/cuda/bin or "
                           "/opt/nvidia/nsight-compute; install it (CUDA toolkit) or set "
                           f"{ENV_NCU}=/path/to/ncu")
