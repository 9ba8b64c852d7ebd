"""What an objective is: a named, directed number read from one candidate's measurement on one shape.

Objectives do not run anything themselves. Each declares the *stage* that produces its input:

- ``static``: the ptxas build (registers, spills, shared memory); a CPU is enough.
- ``runtime``: CUDA-event timing on a GPU.
- ``ncu``: Nsight Compute metrics (``ncu_metrics`` lists the ones it needs; the evaluator collects the union
  over all objectives and runs ncu once per batch).

A campaign composes any list of objectives into one tuple objective; per shape, every objective yields one
column (``name`` for single-shape campaigns, ``name@shape`` otherwise).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from paretotune.records import Direction
from paretotune.toolchain.arch import TargetArch
from paretotune.toolchain.ptxas import BuildStats

Stage = Literal["static", "runtime", "ncu"]


@dataclass(frozen=True)
class ShapeMeasurement:
    """Everything measured for one candidate on one shape."""

    shape: str
    target: TargetArch
    build: BuildStats | None = None
    runtime_ms: float | None = None
    runtime_samples_ms: tuple[float, ...] = ()
    baseline_runtime_ms: float | None = None  # the interleaved baseline measurement nearest in time
    host_ms: float | None = None  # the host's time per call, apart from the GPU clock (timing.host_cost)
    ncu: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_stored(cls, shape: str, target: TargetArch, per_shape: Any) -> ShapeMeasurement:
        """The measurement as a record keeps it in ``extra[<shape>]`` (the build's counts, ``runtime_ms``,
        ``baseline_ms``, ``ncu``: see the evaluators), so an objective's value can be computed again from the
        record itself. What the record lacks stays unset (an objective then raises ValueError); the runtime
        samples are not stored."""
        per_shape = per_shape if isinstance(per_shape, dict) else {}

        def number(key: str) -> float | None:
            v = per_shape.get(key)
            return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

        ncu = per_shape.get("ncu")
        ncu = {k: float(v) for k, v in ncu.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
               } if isinstance(ncu, dict) else {}
        return cls(shape=shape, target=target, build=BuildStats.from_stored(per_shape),
                   runtime_ms=number("runtime_ms"), baseline_runtime_ms=number("baseline_ms"), ncu=ncu)


class Objective(ABC):
    """Base class of every objective. Subclasses set the class attributes and implement :meth:`value`."""

    name: ClassVar[str]
    direction: ClassVar[Direction]
    stage: ClassVar[Stage]
    unit: ClassVar[str] = ""
    ncu_metrics: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **params: Any) -> None:
        if params:
            raise ValueError(f"objective '{self.name}' takes no parameters (got {sorted(params)})")

    @property
    def required_ncu_metrics(self) -> tuple[str, ...]:
        """The ncu metrics this instance needs (instances may add to the class list)."""
        return self.ncu_metrics

    @property
    def effective_direction(self) -> Direction:
        return self.direction

    @abstractmethod
    def value(self, m: ShapeMeasurement) -> float:
        """The objective's value for one measurement; raise ValueError if the input is missing."""

    @property
    def label(self) -> str:
        """The column name stem; objectives with parameters (e.g. one ncu metric) override it to stay unique."""
        return self.name

    def column(self, shape: str, multi_shape: bool) -> str:
        return f"{self.label}@{shape}" if multi_shape else self.label
