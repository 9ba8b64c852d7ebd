"""Objectives read from the ptxas build: a CPU measures them, no GPU needed."""
from __future__ import annotations

from typing import ClassVar

from paretotune.objectives.base import Objective, ShapeMeasurement, Stage
from paretotune.objectives.occupancy_model import theoretical_occupancy
from paretotune.records import Direction
from paretotune.toolchain.ptxas import BuildStats


def _build(m: ShapeMeasurement) -> BuildStats:
    if m.build is None:
        raise ValueError("no ptxas build for this candidate")
    return m.build


class StaticObjective(Objective):
    stage: ClassVar[Stage] = "static"
    direction: ClassVar[Direction] = "min"


class Registers(StaticObjective):
    """Registers per thread: fewer leaves room for more resident warps."""

    name = "registers"
    unit = "regs"

    def value(self, m: ShapeMeasurement) -> float:
        return float(_build(m).registers)


class SpillBytes(StaticObjective):
    """Spill stores + spill loads in bytes: local-memory traffic that costs time."""

    name = "spill_bytes"
    unit = "B"

    def value(self, m: ShapeMeasurement) -> float:
        return float(_build(m).spill_bytes)


class SharedMemory(StaticObjective):
    """Shared memory per block (static + dynamic) in bytes."""

    name = "shared_memory"
    unit = "B"

    def value(self, m: ShapeMeasurement) -> float:
        b = _build(m)
        return float(b.static_shared + b.dynamic_shared)


class TheoreticalOccupancy(StaticObjective):
    """Resident warps / max warps per SM (%), limited by registers, shared memory, block size."""

    name = "theoretical_occupancy"
    direction = "max"
    unit = "%"

    def value(self, m: ShapeMeasurement) -> float:
        return 100.0 * theoretical_occupancy(_build(m), m.target)


class CompileTime(StaticObjective):
    """ptxas wall time in seconds (what an ACF costs at build time)."""

    name = "compile_time"
    unit = "s"

    def value(self, m: ShapeMeasurement) -> float:
        return float(_build(m).compile_s)
