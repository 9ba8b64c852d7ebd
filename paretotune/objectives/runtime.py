"""Runtime on the GPU by a GPU-side clock (CUDA graphs or CUPTI; events only where neither works), and the
host's cost per call beside it; one column per shape in multi-shape campaigns."""
from __future__ import annotations

from typing import ClassVar

from paretotune.objectives.base import Objective, ShapeMeasurement, Stage
from paretotune.records import Direction


class Runtime(Objective):
    """Median GPU time per call in ms by the shape's clock (:mod:`paretotune.measure.timing`), measured next
    to a fresh baseline."""

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


class HostTime(Objective):
    """The host's time per call in ms (dispatch, argument checks, tensor-descriptor setup): what an eager caller
    pays on the CPU, timed apart from the GPU clock. As an objective it shows a config that is faster on the GPU
    but costlier on the host. Measured during the search, beside the build workers: for a figure on an idle host,
    read validation's."""

    name = "host_time"
    direction: ClassVar[Direction] = "min"
    stage: ClassVar[Stage] = "runtime"
    unit = "ms"

    def value(self, m: ShapeMeasurement) -> float:
        if m.host_ms is None:
            raise ValueError("no host-cost measurement")
        return m.host_ms
