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


def cpu_topology() -> dict[str, int | None]:
    """Logical CPUs, physical cores and sockets: 16 "cores" may be 8 cores with two threads each."""
    cores: set[tuple[str, str]] = set()
    phys, core = "", ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("physical id"):
                phys = line.split(":", 1)[1].strip()
            elif line.startswith("core id"):
                core = line.split(":", 1)[1].strip()
                cores.add((phys, core))
    except OSError:
        pass
    return {"logical_cpus": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0)),
            "physical_cores": len(cores) or None, "sockets": len({p for p, _ in cores}) or None}
