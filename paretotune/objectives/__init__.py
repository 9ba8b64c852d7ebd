"""Pluggable objectives: each is a named, directed number; a campaign composes them into a tuple objective."""
from paretotune.objectives.base import Objective, ShapeMeasurement
from paretotune.objectives.registry import OBJECTIVES, objective_names

__all__ = ["OBJECTIVES", "Objective", "ShapeMeasurement", "objective_names"]
