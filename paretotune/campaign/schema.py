"""The campaign file as typed, validated models. Unknown keys are errors (a typo must not pass silently).

Every check that needs only the file itself lives here, so ``paretotune run`` rejects a bad field before it
imports a kernel or starts a compile: names are checked against the registries (objectives, engines, targets,
ACF search spaces), counts are strict integers (``workers: "2"`` is a mistake, not a 2), ranges are bounded.
Checks that need more (the kernel's knobs, the ptxas found, files next to the campaign) are in ``load.py``,
``resolve.py`` and ``acf_check.py``.
Each validator's message is written to follow the field path the loader prints, e.g.
``objectives[2].name: unknown objective 'foo' (known: ...)``.
"""
from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationInfo, field_validator, model_validator

MAX_NAME = 200  # names become file and column names
MAX_FOLDER_BYTES = 100  # of a run folder's name taken from the campaign name (a file name holds 255)
_NOT_FOLDER = re.compile(r"[^\w.+-]+")  # what a run folder's name never holds (\w: letters, digits, '_')
SEARCH_SPACES = ("ptxas-13.3", "none")  # CompileIQ PTXAS control spaces we can sample ACFs from

# Every duration field (a name ending in ``_s`` or ``_ms``) is a finite number with an upper bound from here: an
# unbounded one passed validation and failed at the baseline (``compile_timeout_s: .inf`` made ``selectors``
# raise OverflowError, issue 45). tests/campaign/test_duration_bounds.py finds the fields by their names.
WEEK_S = 7 * 24 * 3600.0  # a whole campaign's budget (search.wall_clock_s)
DAY_S = 24 * 3600.0  # one candidate's compile or measurement, and how old a baseline timing may get
MINUTE_MS = 60_000.0  # one shape's warm-up or timing window per arm


def duration(default: float | None, most: float, *, zero_ok: bool = False) -> Any:
    """A duration field: finite, at most ``most`` (in the field's unit), positive or (``zero_ok``, where 0 has
    a meaning the field's comment gives) non-negative."""
    low = {"ge": 0} if zero_ok else {"gt": 0}
    return Field(default=default, le=most, allow_inf_nan=False, **low)


def ratio(default: float) -> Any:
    """A multiple of a baseline time (0: not used): finite and at most 10000, so a limit it scales stays finite."""
    return Field(default=default, ge=0, le=10_000, allow_inf_nan=False)


def folder_name(name: str) -> str:
    """The campaign name as it names a run folder (``runs/<folder_name>-<time>``): every run of characters but
    letters, digits, '.', '_', '+' and '-' becomes one '-', no leading '.' or '-' (a hidden folder, an option),
    at most :data:`MAX_FOLDER_BYTES` bytes; '' where nothing usable is left. Names with '..', separators or
    control characters never get here (:func:`name_problem`)."""
    safe = _NOT_FOLDER.sub("-", name).lstrip(".-")
    return safe.encode()[:MAX_FOLDER_BYTES].decode(errors="ignore").rstrip("-")


def name_problem(name: str) -> str | None:
    """Why a campaign name cannot be sanitised into a run folder's name, or None. A name is shared in campaign
    files and chosen by service clients, so it is never a path, and it is shown in one-line messages."""
    odd = next((c for c in name if not c.isprintable()), None)
    if odd is not None:
        return f"must not contain control or invisible characters (found {odd!r})"
    if "/" in name or "\\" in name:
        return "must not contain '/' or '\\': a name is not a path (give the run's folder with --out)"
    if ".." in name:
        return "must not contain '..': a name is not a path (give the run's folder with --out)"
    if not folder_name(name):
        return "needs a letter, a digit or '_': it names the run's folder"
    return None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _known(names: list[str] | tuple[str, ...]) -> str:
    return ", ".join(sorted(names))


CODE_FIELDS = ("source", "inputs", "heuristic")  # KernelSpec fields that name code the campaign imports (one
# confinement rule in the service, one trial import in a child with a deadline: campaign/user_code.py)


class KernelSpec(_Strict):
    """Which kernel to tune: ``module:attr`` or ``path/to/file.py:attr`` naming a TritonKernel/HelionKernel,
    or a bare Helion kernel (``@helion.kernel`` / ``@helion.aot_kernel``) together with ``inputs``, a
    ``module:attr`` or ``file.py:attr`` function ``(shape, device, seed) -> args``. Such a kernel's space is
    Helion's own ConfigSpec, its baseline per shape the AOT heuristic (``heuristic``: a file; by default the
    target's ``_helion_aot_<name>_cuda_smNN.py`` beside the kernel), and its reference the baseline's output.
    Or any Triton or Helion kernel together with ``captured``, a capture's calls file (``paretotune capture``):
    inputs rebuilt from the recorded calls, one shape per captured signature, the program's config as baseline."""

    source: str = Field(min_length=3, max_length=4096)
    inputs: str | None = Field(default=None, min_length=3, max_length=4096)  # input factory for a bare Helion kernel
    captured: str | None = Field(default=None, min_length=1, max_length=4096)  # calls file (relative to the campaign)
    heuristic: str | None = Field(default=None, min_length=1, max_length=4096)  # AOT heuristic .py file
    atol: float | None = Field(default=None, ge=0)  # tolerances of the correctness check (bare Helion kernel)
    rtol: float | None = Field(default=None, ge=0)
    space: dict[str, list[Any]] | None = None  # overrides (a subset of) the adapter's knobs
    default: dict[str, Any] | None = None  # overrides the baseline config

    @field_validator("source", "inputs")
    @classmethod
    def _has_attr(cls, v: str | None) -> str | None:
        if v is None:
            return v
        target, _, attr = v.rpartition(":")
        if not target or not attr:
            raise ValueError(f"{v!r} must be 'module:attr' or 'path/to/file.py:attr'")
        return v

    @field_validator("heuristic")
    @classmethod
    def _python_file(cls, v: str | None) -> str | None:
        if v is not None and not v.endswith(".py"):
            raise ValueError(f"{v!r} is not a Python file: an AOT heuristic is a .py file (relative to the campaign)")
        return v

    @model_validator(mode="after")
    def _one_input_source(self) -> KernelSpec:
        if self.inputs is not None and self.captured is not None:
            raise ValueError("give either inputs or captured, not both")
        return self

    @field_validator("space")
    @classmethod
    def _non_empty(cls, v: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
        for key, values in (v or {}).items():
            if not values:
                raise ValueError(f"knob '{key}' has no values")
            odd = [x for x in values if not _knob_value(x)]
            if odd:
                raise ValueError(f"knob '{key}': values must be numbers, strings, booleans or lists of them "
                                 f"(got {odd[0]!r})")
            if len({repr(x) for x in values}) != len(values):
                raise ValueError(f"knob '{key}' lists a value twice")
        return v


def _knob_value(value: Any) -> bool:
    """A scalar, or a list of scalars, nulls and such lists: Helion's config values are whole lists
    (``block_sizes: [[1]]``, ``reduction_loops: [[null]]``), a kernel's own check then judges the value."""
    if isinstance(value, list):
        return all(item is None or _knob_value(item) for item in value)
    return isinstance(value, (int, float, str, bool))


class ShapeSpec(BaseModel):
    """One input shape; every key but ``name`` goes to the kernel's input factory (e.g. M, N, dtype)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    name: str | None = Field(default=None, min_length=1, max_length=MAX_NAME)

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

    @field_validator("name")
    @classmethod
    def _registered(cls, v: str) -> str:
        from paretotune.objectives.registry import OBJECTIVES

        if v not in OBJECTIVES:
            raise ValueError(f"unknown objective '{v}' (known: {_known(list(OBJECTIVES))})")
        return v

    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class AcfSpec(_Strict):
    """Where ACFs come from: a CompileIQ search space, a finite list / zip pack, or none."""

    search_space: str | None = "ptxas-13.3"
    files: list[str] | None = Field(default=None, min_length=1)
    pack: str | None = Field(default=None, min_length=1)

    @field_validator("search_space")
    @classmethod
    def _known_space(cls, v: str | None) -> str | None:
        if v is not None and v not in SEARCH_SPACES:
            raise ValueError(f"unknown search space '{v}' (known: {_known(SEARCH_SPACES)})")
        return v

    @model_validator(mode="after")
    def _one_source(self) -> AcfSpec:
        if self.files is not None and self.pack is not None:
            raise ValueError("give either files or pack, not both")
        if self.files is not None or self.pack is not None:
            object.__setattr__(self, "search_space", None)
        return self

    @property
    def kind(self) -> Literal["generated", "finite", "none"]:
        if self.files is not None or self.pack is not None:
            return "finite"
        return "none" if self.search_space in (None, "none") else "generated"

    @property
    def ptxas_version(self) -> str:
        """The ptxas major.minor the ACFs are made for (they are rejected by any other release)."""
        return "13.3"


class HelionSearchSpec(_Strict):
    """The helion engine's settings (``search.helion``; :mod:`paretotune.search.helion_search`): which of Helion's
    search algorithms and effort profiles, CompileIQ ACFs per search round, searches run side by side."""

    algorithm: str = "LFBOTreeSearch"
    effort: Literal["quick", "full"] = "quick"
    acfs: StrictInt = Field(default=8, ge=1, le=64)
    islands: StrictInt = Field(default=2, ge=1, le=8)

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, v: str) -> str:
        from paretotune.search.catalog import choices

        known = choices("helion", "algorithm")
        if v not in known:
            raise ValueError(f"unknown Helion search algorithm '{v}' (known: {_known(known)})")
        return v


class SearchSpec(_Strict):
    """The engine and the budget: the campaign stops at generations × pool_size evaluations or wall time.
    ``engine: auto`` (the default): Helion's own search, ACFs as one more dimension, for a joint search of a
    Helion kernel whose space is Helion's ConfigSpec; CompileIQ otherwise (``search/catalog.py``)."""

    engine: str = "auto"
    helion: HelionSearchSpec = HelionSearchSpec()
    strategy: Literal["joint", "sequential", "acf-only"] = "joint"
    generations: StrictInt = Field(default=6, ge=1, le=10_000)
    pool_size: StrictInt = Field(default=8, ge=6, le=4096)
    wall_clock_s: float | None = duration(None, WEEK_S)  # no proposal after this; those in flight finish
    # Candidates kept in flight (proposed, not yet scored) when the engine and evaluator allow overlapping
    # generations; default pool_size. ``barrier: true`` evaluates one whole generation at a time instead.
    in_flight: StrictInt | None = Field(default=None, ge=1, le=4096)
    barrier: bool = False

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, v: str) -> str:
        from paretotune.search.catalog import engine_names

        if v not in engine_names():
            raise ValueError(f"unknown engine '{v}' (known: {_known(engine_names())})")
        return v

    @property
    def budget(self) -> int:
        return self.generations * self.pool_size


class EvaluationSpec(_Strict):
    """How candidates are measured."""

    workers: StrictInt = Field(default=2, ge=1, le=256)
    compile_timeout_s: float = duration(60.0, DAY_S)
    # A search candidate's ptxas is cut off at this multiple of the baseline's ptxas time, never sooner than
    # compile_timeout_min_s nor later than compile_timeout_s (0: always compile_timeout_s). A generation waits
    # for its slowest compile, and some sampled ACFs make ptxas hang.
    compile_timeout_vs_baseline: float = ratio(30.0)
    # Its whole build (Triton's compile, which only a kill ends, and ptxas) at this multiple of the baseline's
    # build, within the same bounds, plus twice its ptxas limit (build/static_job.build_limit_s; 0: the old limit)
    build_timeout_vs_baseline: float = ratio(10.0)
    compile_timeout_min_s: float = duration(10.0, DAY_S)
    measure_timeout_s: float = duration(60.0, DAY_S)
    # A search candidate's GPU measurement is cut off, per shape, at this multiple of the baseline's measurement
    # time, never sooner than measure_timeout_min_s nor later than measure_timeout_s (0: always
    # measure_timeout_s). Some sampled ACFs build kernels that never finish; each one held the GPU worker for the
    # full limit, so a campaign stored almost nothing before its wall clock ran out.
    measure_timeout_vs_baseline: float = ratio(20.0)
    measure_timeout_min_s: float = duration(10.0, DAY_S)
    # GPU worker processes kept ready to take over after a CUDA fault (each holds a CUDA context): a replacement
    # takes seconds to be ready, longer than faulting ACFs may come apart (docs/results.md)
    gpu_spares: StrictInt = Field(default=3, ge=0, le=8)
    device: str = "cuda:0"
    warmup_ms: float = duration(25.0, MINUTE_MS, zero_ok=True)  # 0: no warm-up
    rep_ms: float = duration(100.0, MINUTE_MS)
    # 0: the baseline is re-timed right before every candidate (A/B pairs). N > 0: only once its last timing is
    # N seconds old (saves a timing per candidate; drift between the two grows with N).
    baseline_interval_s: float = duration(0.0, DAY_S, zero_ok=True)
    # How each shape's arms are timed. auto ranks by a GPU-side clock: CUDA-graph replays for calls under ~50 us
    # of GPU time, CUPTI kernel time (L2 flushed) above that or where graphs cannot capture the call; events only
    # where neither works. cupti / cudagraph / events name one method (events: host time enters the figure).
    timing: Literal["auto", "events", "cudagraph", "cupti"] = "auto"

    @field_validator("device")
    @classmethod
    def _cuda_device(cls, v: str) -> str:
        head, _, index = v.partition(":")
        if head != "cuda" or (index and not index.isdigit()):
            raise ValueError(f"'{v}' is not a CUDA device (expected 'cuda' or 'cuda:N')")
        return v


class ExecutionSpec(_Strict):
    backend: Literal["local", "ray"] = "local"
    address: str = Field(default="auto", min_length=1)
    gpus_per_worker: float = Field(default=1.0, gt=0)


class CampaignSpec(_Strict):
    """A whole campaign file."""

    name: str = Field(default="campaign", min_length=1, max_length=MAX_NAME)
    kernel: KernelSpec
    shapes: list[ShapeSpec] = Field(min_length=1)
    objectives: list[ObjectiveSpec] = Field(min_length=1)
    target: str = "sm_90"
    acf: AcfSpec = AcfSpec()
    search: SearchSpec = SearchSpec()
    evaluation: EvaluationSpec = EvaluationSpec()
    execution: ExecutionSpec = ExecutionSpec()
    seed: StrictInt = Field(default=0, ge=0, lt=2**32)  # numpy and torch seeds are 32-bit

    @model_validator(mode="before")
    @classmethod
    def _shapes_from_kernel(cls, data: Any) -> Any:
        """``shapes: from-kernel``: the sweep the pretuned kernel's own ``main()`` benchmarks
        (:mod:`paretotune.kernels.sweeps`; pure data, nothing imported)."""
        if not isinstance(data, dict) or data.get("shapes") != "from-kernel":
            return data
        from paretotune.kernels.sweeps import SWEEPS, WORKLOADS_MODULE, sweep_for

        kernel = data.get("kernel")
        inputs = kernel.get("inputs") if isinstance(kernel, dict) else None
        sweep = sweep_for(inputs if isinstance(inputs, str) else None)
        if sweep is None:
            raise ValueError(f"shapes: from-kernel takes the sweep of a pretuned kernel, so kernel.inputs must be "
                             f"{WORKLOADS_MODULE}:<name> (known: {_known(list(SWEEPS))}); got {inputs!r}")
        return {**data, "shapes": sweep}

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        problem = name_problem(v)
        if problem:
            raise ValueError(problem)
        return v

    @field_validator("objectives", mode="before")
    @classmethod
    def _names_to_dicts(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"name": o} if isinstance(o, str) else o for o in v]
        return v

    @field_validator("shapes")
    @classmethod
    def _unique_shapes(cls, v: list[ShapeSpec]) -> list[ShapeSpec]:
        labels = [s.label() for s in v]
        dupes = sorted({x for x in labels if labels.count(x) > 1})
        if dupes:
            raise ValueError(f"shape names must be unique (repeated: {', '.join(dupes)})")
        return v

    @model_validator(mode="after")
    def _engine_fits(self) -> CampaignSpec:
        from paretotune.search.catalog import search_problem

        problem = search_problem(self.search.engine, self.search.strategy, self.acf.kind)
        if problem:
            raise ValueError(problem)  # the message starts with the field path
        return self

    @field_validator("target")
    @classmethod
    def _known_target(cls, v: str) -> str:
        from paretotune.toolchain.arch import TARGETS

        if v not in TARGETS:
            raise ValueError(f"unknown target '{v}' (known: {', '.join(TARGETS)})")
        return v

    @field_validator("search")
    @classmethod
    def _search_fits_acf(cls, v: SearchSpec, info: ValidationInfo) -> SearchSpec:
        from paretotune.search.catalog import search_problem

        acf = info.data.get("acf")  # validated before search (field order); absent if it was invalid
        problem = search_problem(v.engine, v.strategy, acf.kind) if acf is not None else None
        if problem:
            raise ValueError(problem)
        return v
