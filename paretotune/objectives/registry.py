"""Objective names usable in a campaign. A new objective is one module plus one line here."""
from __future__ import annotations

from paretotune.objectives import ncu_objectives, runtime, static
from paretotune.objectives.base import Objective

OBJECTIVES: dict[str, type[Objective]] = {
    "registers": static.Registers,
    "spill_bytes": static.SpillBytes,
    "shared_memory": static.SharedMemory,
    "theoretical_occupancy": static.TheoreticalOccupancy,
    "compile_time": static.CompileTime,
    "runtime": runtime.Runtime,
    "speedup": runtime.Speedup,
    "host_time": runtime.HostTime,
    "occupancy": ncu_objectives.Occupancy,
    "l1tex_throughput": ncu_objectives.L1texThroughput,
    "ncu_metric": ncu_objectives.NcuMetric,
}


def objective_names() -> list[str]:
    return sorted(OBJECTIVES)
