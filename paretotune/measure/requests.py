"""What the GPU stage is asked to do, as one frozen value: the runner makes it from the campaign
(:func:`paretotune.runner.evaluator.measure_request`), so the evaluators, measurers and GPU workers read only the
few fields they use and never depend on the campaign file's schema as a whole.
"""
from __future__ import annotations

from dataclasses import dataclass

from paretotune.campaign.schema import EvaluationSpec
from paretotune.records import Shape
from paretotune.toolchain.arch import TargetArch


@dataclass(frozen=True)
class MeasureRequest:
    """The shapes to measure, for which target, by which clock and within which limits (``evaluation``), with
    inputs drawn from ``seed``. A worker process re-creates the kernel adapter from the campaign file's path and
    text (user code is imported there, not pickled across)."""

    campaign_path: str  # also what messages name (a device or cluster problem is the campaign file's)
    campaign_text: str
    shapes: tuple[Shape, ...]
    target: TargetArch
    evaluation: EvaluationSpec
    seed: int
    gpus_per_worker: float = 1.0  # GPUs per measurement actor (the Ray backend)

    @property
    def multi_shape(self) -> bool:
        """Objective columns then carry the shape's label."""
        return len(self.shapes) > 1
