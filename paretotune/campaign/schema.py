"""The campaign file as typed, validated models. Unknown keys are errors (a typo must not pass silently)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KernelSpec(_Strict):
    """Which kernel to tune: ``module:attr`` or ``path/to/file.py:attr`` naming a TritonKernel/HelionKernel."""

    source: str = Field(min_length=3)
    space: dict[str, list[Any]] | None = None  # overrides (a subset of) the adapter's knobs
    default: dict[str, Any] | None = None  # overrides the baseline config

    @field_validator("source")
    @classmethod
    def _has_attr(cls, v: str) -> str:
        if ":" not in v:
            raise ValueError("must be 'module:attr' or 'path/to/file.py:attr'")
        return v

    @field_validator("space")
    @classmethod
    def _non_empty(cls, v: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
        for key, values in (v or {}).items():
            if not values:
                raise ValueError(f"knob '{key}' has no values")
        return v


class ShapeSpec(BaseModel):
    """One input shape; every key but ``name`` goes to the kernel's input factory (e.g. M, N, dtype)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    name: str | None = None

    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    def label(self) -> str:
        if self.name:
            return self.name
        return "x".join(str(v) for v in self.params().values() if isinstance(v, int)) or "shape"


class ObjectiveSpec(BaseModel):
    """An objective by registry name, with its parameters (e.g. ``metric`` for ``ncu_metric``)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    name: str

    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class AcfSpec(_Strict):
    """Where ACFs come from: a CompileIQ search space, a finite list / zip pack, or none."""

    search_space: str | None = "ptxas-13.3"
    files: list[str] | None = None
    pack: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> AcfSpec:
        if self.files is not None or self.pack is not None:
            object.__setattr__(self, "search_space", None)
        if self.files is not None and self.pack is not None:
            raise ValueError("give either files or pack, not both")
        if self.search_space is not None and self.search_space not in ("ptxas-13.3", "none"):
            raise ValueError(f"unknown search space '{self.search_space}' (known: ptxas-13.3, none)")
        return self

    @property
    def kind(self) -> Literal["generated", "finite", "none"]:
        if self.files is not None or self.pack is not None:
            return "finite"
        return "none" if self.search_space in (None, "none") else "generated"

    @property
    def ptxas_version(self) -> str:
        return "13.3"


class SearchSpec(_Strict):
    """The engine and the budget: the campaign stops at generations × pool_size evaluations or wall time."""

    engine: str = "compileiq"
    strategy: Literal["joint", "sequential"] = "joint"
    generations: int = Field(default=6, ge=1)
    pool_size: int = Field(default=8, ge=6)
    wall_clock_s: float | None = Field(default=None, gt=0)

    @property
    def budget(self) -> int:
        return self.generations * self.pool_size


class EvaluationSpec(_Strict):
    """How candidates are measured."""

    workers: int = Field(default=2, ge=1, le=256)
    compile_timeout_s: float = Field(default=60.0, gt=0)
    measure_timeout_s: float = Field(default=60.0, gt=0)
    device: str = "cuda:0"
    warmup_ms: float = Field(default=25.0, ge=0)
    rep_ms: float = Field(default=100.0, gt=0)


class ExecutionSpec(_Strict):
    backend: Literal["local", "ray"] = "local"
    address: str = "auto"
    gpus_per_worker: float = Field(default=1.0, gt=0)


class CampaignSpec(_Strict):
    """A whole campaign file."""

    name: str = Field(default="campaign", min_length=1)
    kernel: KernelSpec
    shapes: list[ShapeSpec] = Field(min_length=1)
    objectives: list[ObjectiveSpec] = Field(min_length=1)
    target: str = "sm_90"
    acf: AcfSpec = AcfSpec()
    search: SearchSpec = SearchSpec()
    evaluation: EvaluationSpec = EvaluationSpec()
    execution: ExecutionSpec = ExecutionSpec()
    seed: int = 0

    @field_validator("objectives", mode="before")
    @classmethod
    def _names_to_dicts(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"name": o} if isinstance(o, str) else o for o in v]
        return v

    @model_validator(mode="after")
    def _unique_shapes(self) -> CampaignSpec:
        labels = [s.label() for s in self.shapes]
        dupes = sorted({x for x in labels if labels.count(x) > 1})
        if dupes:
            raise ValueError(f"shape names must be unique (repeated: {', '.join(dupes)})")
        return self
