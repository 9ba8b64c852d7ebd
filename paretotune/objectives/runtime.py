"""Runtime on the GPU: median of CUDA-event samples, one column per shape in multi-shape campaigns."""
from __future__ import annotations

from typing import ClassVar

from paretotune.objectives.base import Objective, ShapeMeasurement, Stage
from paretotune.records import Direction


class Runtime(Objective):
    """Median kernel time in ms (L2 flushed between samples), measured next to a fresh baseline."""

    name = "runtime"
    direction: ClassVar[Direction] = "min"
    stage: ClassVar[Stage] = "runtime"
    unit = "ms"

    def value(self, m: ShapeMeasurement) -> float:
        if m.runtime_ms is None:
            raise ValueError("no runtime measurement")
        return m.runtime_ms


class Speedup(Objective):
    """Neighbouring baseline time / candidate time: drift-free across a long run (higher is better)."""

    name = "speedup"
    direction: ClassVar[Direction] = "max"
    stage: ClassVar[Stage] = "runtime"
    unit = "x"

    def value(self, m: ShapeMeasurement) -> float:
        if m.runtime_ms is None or m.baseline_runtime_ms is None:
            raise ValueError("no paired runtime measurement")
        return m.baseline_runtime_ms / m.runtime_ms
