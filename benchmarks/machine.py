"""Facts about the machine a benchmark ran on, recorded next to every figure."""
from __future__ import annotations

import os
import platform
from pathlib import Path


def load_average() -> list[float] | None:
    """1/5/15-minute load: a busy machine explains a slow figure."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
