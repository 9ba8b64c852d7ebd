"""What a run is made of before its loop starts: the objective columns, the engine, and ``run.json``'s
metadata; :func:`prepare_run` checks everything checkable before the run directory exists, so a typo never
costs a compile and a failed start leaves nothing behind."""
from __future__ import annotations

import importlib.metadata
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from paretotune.campaign.acf_check import check_acf_files, check_search_space
from paretotune.campaign.load import Campaign
from paretotune.campaign.schema import folder_name
from paretotune.campaign.resolve import make_adapter, make_objectives
from paretotune.kernels.base import baseline_config
from paretotune.objectives.base import Objective
from paretotune.records import HOW_TIMED
from paretotune.search.base import SearchEngine
from paretotune.search.registry import EngineRequest
from paretotune.store.run_dir import ObjectiveColumn, RunDir
from paretotune.toolchain.ptxas import Ptxas


def objective_columns(campaign: Campaign, objectives: Sequence[Objective]) -> list[ObjectiveColumn]:
    return [ObjectiveColumn(column=o.column(s.label, campaign.multi_shape), direction=o.effective_direction,
                            objective=o.name, shape=s.label)
            for s in campaign.shapes for o in objectives]


def default_run_dir(campaign: Campaign) -> Path:
    """Where a run goes without ``--out``: ``runs/<name>-<time>`` under the working directory, the name
    sanitised (:func:`~paretotune.campaign.schema.folder_name`; the schema refused names it cannot sanitise),
    so a shared campaign file or a service client cannot pick where a run is written."""
    return Path("runs") / f"{folder_name(campaign.spec.name)}-{time.strftime('%Y%m%d-%H%M%S')}"


def engine_request(campaign: Campaign) -> EngineRequest:
    """What the engine factory reads of ``campaign``."""
    search = campaign.spec.search
    return EngineRequest(where=campaign.path, engine=search.engine, strategy=search.strategy,
                         pool_size=search.pool_size, generations=search.generations, seed=campaign.spec.seed,
                         acf=campaign.spec.acf, helion=search.helion.model_dump())


def make_engine(campaign: Campaign, adapter: Any, n_objectives: int) -> SearchEngine:
    from paretotune.search.registry import make_engine as build

    request = engine_request(campaign)
    baseline = baseline_config(adapter, campaign.shapes)
    if campaign.spec.search.strategy == "acf-only":  # no config knob is searched: the space is never derived
        return build(request, {k: [v] for k, v in baseline.items()}, n_objectives)
    # joint starts from the baseline config (per-shape baselines: the first shape's), when the kernel takes it
    seed = baseline or adapter.default_config(campaign.shapes[0])
    constraint = getattr(adapter, "constraint", lambda: None)()  # adapters without one take every config
    if constraint is not None and not constraint(seed):
        seed = {}
    return build(request, adapter.space(), n_objectives, constraint=constraint, seed_config=seed,
                 native=native_space(campaign, adapter))


def native_space(campaign: Campaign, adapter: Any) -> Any:
    """Helion's ConfigSpec for engines that search it natively (``engine: auto`` / ``helion``), where the space is
    Helion's own: not narrowed by ``kernel.space`` (Helion's search would not keep to the narrowed lists)."""
    native = getattr(adapter, "native_space", None)
    if native is None or campaign.spec.kernel.space:
        return None
    return native()


def run_meta(campaign: Campaign, ptxas: Ptxas, columns: Sequence[ObjectiveColumn], seed: int) -> dict[str, Any]:
    import platform

    from paretotune.version import __version__

    versions: dict[str, str] = {"paretotune": __version__, "ptxas": ptxas.version, "python": platform.python_version()}
    for dist in ("triton", "torch", "compileiq", "helion"):
        try:  # package metadata: importing helion just for its version would take seconds
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return {"campaign": campaign.spec.name, "campaign_path": str(campaign.path), "target": campaign.target.name,
            "shapes": [s.label for s in campaign.shapes], "seed": seed, "versions": versions,
            "ptxas_path": str(ptxas.path), "objective_columns": [c.__dict__ for c in columns],
            "acf_space": check_search_space(campaign),  # where CompileIQ's space came from (None: no generated ACFs)
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def check_before_import(campaign: Campaign) -> list[Objective]:
    """The checks that need no kernel import (ACF files, objectives, a CUDA GPU when an objective needs one):
    seconds, so they run before any worker process starts."""
    from paretotune.measure.gpu_check import require_gpu_for

    check_acf_files(campaign)
    objectives = make_objectives(campaign)
    require_gpu_for(objectives, f"{campaign.path}: objectives", backend=campaign.spec.execution.backend)
    return objectives


def prepare_run(campaign: Campaign, ptxas: Ptxas, seed: int, objectives: Sequence[Objective],
                after_trial: Callable[[], None] | None = None) -> tuple[dict[str, Any], Any]:
    """What is checkable after :func:`check_before_import` (which gave ``objectives``) and before a run
    directory exists, while the workers start: CompileIQ's space for generated ACFs (here, not before: importing
    CompileIQ would hold the workers' start by half a second), the kernel import and its shapes. Returns the
    run's metadata and the kernel adapter (the loop reuses it: its space and baselines are derived once).
    ``start_s`` in the metadata: seconds per step (``kernel_import_s``: the import's own steps). ``after_trial``:
    called once the kernel passed its trial import (early workers then import it too)."""
    check_search_space(campaign)
    t1 = time.monotonic()
    # resolve the kernel before any work: a typo fails now
    steps: dict[str, float] = {}
    adapter = make_adapter(campaign, trial_import=True, after_trial=after_trial, steps=steps)
    t2 = time.monotonic()
    meta = run_meta(campaign, ptxas, objective_columns(campaign, objectives), seed)
    meta["kernel"] = kernel_meta(campaign, adapter)
    meta["start_s"] = {"kernel_import": round(t2 - t1, 3), "baselines_and_space": round(time.monotonic() - t2, 3)}
    meta["kernel_import_s"] = {k: round(v, 3) for k, v in steps.items()}  # start_s's kernel_import, step by step
    return meta, adapter


def start_run(campaign: Campaign, out: Path, ptxas: Ptxas, seed: int) -> RunDir:
    """Create the run directory with the campaign copy and metadata (for callers that lock it themselves)."""
    objectives = make_objectives(campaign)
    adapter = make_adapter(campaign)
    meta = run_meta(campaign, ptxas, objective_columns(campaign, objectives), seed)
    meta["kernel"] = kernel_meta(campaign, adapter)
    run = RunDir(out)
    run.create(campaign.text, meta)
    return run


def kernel_meta(campaign: Campaign, adapter: Any) -> dict[str, Any]:
    """Where each shape's baseline config came from, and what a derived space leaves out (``notes``: one line
    each, printed by ``paretotune run``)."""
    baselines = {s.label: adapter.default_config(s) for s in campaign.shapes}
    sources = dict(getattr(adapter, "baseline_source", {}) or {})
    notes = [f"baseline {label}: {sources[label]}" for label in baselines if label in sources]
    if campaign.spec.search.strategy == "acf-only":
        notes.append("strategy acf-only: every candidate keeps its shape's baseline config; only ACFs are searched")
    else:
        adapter.space()  # a derived space says what it restricts only once it is built
        note = getattr(adapter, "space_note", None)
        if note:
            notes.append(note)
        note = engine_note(campaign, adapter)
        if note:
            notes.append(note)
    meta = {"baselines": baselines, "baseline_sources": sources, "notes": notes}
    if isinstance(static := getattr(adapter, "static_shapes", None), bool):  # a Helion kernel's own setting
        meta["static_shapes"] = static
    return meta


def note_measurement(run: RunDir, baseline: Any, shapes: Sequence[Any]) -> None:
    """Write into ``run.json`` how each shape's arms are timed (:data:`HOW_TIMED`), from the baseline's
    measurement: the method and why, which input tensors the kernel writes (restored from a pristine copy before
    every timing round), the GPU activities of one call. A static run measures nothing on a GPU and writes nothing
    here."""
    per_shape = {s.label: baseline.extra.get(s.label, {}) for s in shapes}
    measured = {label: {k: v[k] for k in HOW_TIMED if k in v}
                for label, v in per_shape.items() if "timing" in v}
    if measured:
        run.write_meta({**run.meta(), "measurement": measured})


def engine_note(campaign: Campaign, adapter: Any) -> str | None:
    """One line when Helion's own search runs (``engine: auto`` picks it for a Helion ConfigSpec); an explicit
    ``engine: helion`` on a kernel without one fails here, before the run directory exists."""
    from paretotune.errors import UserError
    from paretotune.search.catalog import resolve_engine

    search = campaign.spec.search
    native = native_space(campaign, adapter) is not None
    if search.engine == "helion" and not native:
        raise UserError(f"{campaign.path}: search.engine: helion searches Helion's own ConfigSpec; it needs a Helion "
                        "kernel whose space is Helion's (no kernel.space, no space in the kernel's spec)")
    if resolve_engine(search.engine, search.strategy, native) != "helion":
        return None
    h = search.helion
    acfs = {"generated": f"{h.acfs} CompileIQ ACFs per round", "finite": "the campaign's ACF list",
            "none": "none"}[campaign.spec.acf.kind]
    return (f"search: Helion's {h.algorithm} (effort {h.effort}, {h.islands} side by side) over its ConfigSpec; "
            f"ACFs one more dimension ({acfs})")
