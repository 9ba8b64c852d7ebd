"""Resolve a loaded campaign's names to objects: the kernel adapter (user code imported, knobs, default and
shapes checked) and the objectives (parameters checked). ``start_run`` calls both before it creates the run
directory, so a typo never costs a compile; every message names the file and the field."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from paretotune.campaign.load import Campaign
from paretotune.campaign.user_code import add_program_path, check_files, import_object, named_code
from paretotune.errors import UserError
from paretotune.kernels.base import KernelAdapter, UnknownShapeKey, validate_config
from paretotune.objectives.base import Objective
from paretotune.text_file import not_a_file


def make_adapter(campaign: Campaign, *, trial_import: bool = False, after_trial: Callable[[], None] | None = None,
                 steps: dict[str, float] | None = None) -> KernelAdapter:
    """Instantiate the adapter for the kernel spec object the campaign names (Triton or Helion).
    ``trial_import``: import every piece of user code it names in one child first, within the import deadline
    (:func:`~paretotune.campaign.trial_import.trial_imports`; the CLI's first look at a campaign does), then
    here with their output hidden (the trial showed it); ``after_trial``: called once all passed (workers
    started early wait for it before they import the code). A kernel that does not mention Helion has no
    heuristic file to find after its import: its trial is all of it, so workers may import it while this
    process does (a slow import is paid once on the way to the first build, not twice). ``steps``, if given, gets
    the seconds of each step (trial import, import, adapter, heuristic, space and checks): where a slow start went."""
    from paretotune.campaign.trial_import import kernel_mentions_helion
    from paretotune.kernels.registry import adapter_for

    where = f"{campaign.path}: kernel.source"
    override = campaign.spec.kernel
    early = trial_import and after_trial is not None and not kernel_mentions_helion(campaign)
    steps = {} if steps is None else steps
    obj = _kernel_object(campaign, trial_import, after_trial if early else None, steps)
    from paretotune.kernels.inline import MODULE as INLINE

    t0 = time.monotonic()
    adapter = adapter_for(obj, override.source.rpartition(":")[2], where,
                          as_object=override.source.startswith(f"{INLINE}:"))
    _use_campaign(campaign, adapter)
    t1 = time.monotonic()
    if trial_import:
        _trial_heuristic(campaign, adapter)
    if after_trial is not None and not early:
        after_trial()
    t2 = time.monotonic()
    steps.update(adapter=t1 - t0, heuristic=t2 - t1)
    restrict = getattr(adapter, "restrict_to", None)
    if restrict is not None:  # e.g. an autotuned kernel's configs that its pruning drops on every shape
        try:
            restrict(campaign.shapes)
        except Exception as exc:  # noqa: BLE001 - the kernel's own prune function or input factory failed
            raise UserError(f"{where}: pruning the kernel's configs for the campaign's shapes failed "
                            f"({type(exc).__name__}: {exc})") from None
    if override.space:
        _check_space_override(campaign, adapter)
    if override.space or override.default:
        from paretotune.kernels.overrides import OverriddenAdapter

        adapter = OverriddenAdapter(adapter, space=override.space, default=override.default)
    try:
        adapter.check_space(adapter.space())
    except ValueError as exc:
        raise UserError(f"{campaign.path}: kernel.space.{exc}") from None
    _check_shapes(campaign, adapter)
    _check_defaults(campaign, adapter)
    steps["space_and_checks"] = time.monotonic() - t2
    return adapter


def _kernel_object(campaign: Campaign, trial_import: bool, passed: Callable[[], None] | None = None,
                   steps: dict[str, float] | None = None) -> Any:
    """The object ``kernel.source`` names, imported (after a trial import in a child, if asked; ``passed`` is
    called once it passed), made a spec with ``kernel.inputs`` or ``kernel.captured`` where the campaign gives
    one. ``steps`` gets the seconds of the trial import (and of its phases) and of the import itself."""
    import contextlib
    import sys

    from paretotune.campaign.trial_import import hidden_output, trial_imports

    where = f"{campaign.path}: kernel.source"
    override = campaign.spec.kernel
    module, program_path = captured_context(campaign)
    add_program_path(program_path)  # before the trial forks: the child finds what the kernel imports too
    codes = named_code(override, campaign.path.parent, str(campaign.path), module)
    check_files(codes)
    phases: dict[str, float] = {}
    t0 = time.monotonic()
    if trial_import:  # a module already imported here has nothing left to run at import time
        phases = trial_imports([c for c in codes if c.is_file or c.target not in sys.modules])
        if passed is not None:
            passed()
    t1 = time.monotonic()
    with hidden_output() if trial_import else contextlib.nullcontext():
        obj = import_object(override.source, campaign.path.parent, where, module=module)
        factory = None if override.inputs is None else import_object(override.inputs, campaign.path.parent,
                                                                       f"{campaign.path}: kernel.inputs")
    if factory is not None:
        from paretotune.kernels.helion import spec_from_kernel

        try:
            obj = spec_from_kernel(obj, factory, atol=override.atol, rtol=override.rtol)
        except TypeError as exc:
            raise UserError(f"{where}: {exc}") from None
    if override.captured is not None:
        obj = _captured(campaign, obj)
    if steps is not None:  # the trial's own phases too: Helion here meanwhile, the child's answer, its end
        steps.update({"trial_import": t1 - t0, "import": time.monotonic() - t1,
                      **{f"trial_{k}": v for k, v in phases.items()}})
    return obj


def _check_space_override(campaign: Campaign, adapter: KernelAdapter) -> None:
    """``kernel.space`` names only the kernel's knobs, and leaves at least one of a listed-configs kernel's configs."""
    from paretotune.kernels.overrides import OverriddenAdapter
    from paretotune.search.space import CONFIG_LIST_KNOB

    override = campaign.spec.kernel
    known = adapter.space()
    in_list = {k for c in known.get(CONFIG_LIST_KNOB, []) if isinstance(c, dict) for k in c}
    for key in override.space:
        if key not in known and key not in in_list:
            raise UserError(f"{campaign.path}: kernel.space.{key}: unknown kernel knob '{key}' "
                            f"(known: {', '.join(sorted(set(known) - {CONFIG_LIST_KNOB} | in_list))})")
    if CONFIG_LIST_KNOB in known:
        left = OverriddenAdapter(adapter, space=override.space, default=None).space().get(CONFIG_LIST_KNOB)
        if left is not None and not left:
            raise UserError(f"{campaign.path}: kernel.space: no listed config of the kernel has these values")


def _check_defaults(campaign: Campaign, adapter: KernelAdapter) -> None:
    """Each shape's default config is in the space (a Helion ConfigSpec space holds them by construction)."""
    from paretotune.kernels.helion import HelionAdapter

    override = campaign.spec.kernel
    inner = getattr(adapter, "inner", adapter)
    derived = isinstance(inner, HelionAdapter) and inner.spec.space is None
    if not derived or override.default or override.space:
        # a Helion ConfigSpec space holds every shape's baseline by construction: other spaces are checked
        for shape in campaign.shapes:
            validate_config(adapter.space(), adapter.default_config(shape), f"{campaign.path}: kernel.default")


def _trial_heuristic(campaign: Campaign, adapter: Any) -> None:
    """A Helion kernel's AOT heuristic file is user code too: the one Helion finds beside the kernel (none was
    named) is imported in a child first, like the named ones were; then each is imported here, quietly."""
    import contextlib

    from paretotune.campaign.trial_import import Code, hidden_output, trial_imports
    from paretotune.kernels.helion import HelionAdapter

    path = adapter.heuristic_path() if isinstance(adapter, HelionAdapter) else None
    if path is None:
        return
    if campaign.spec.kernel.heuristic is None:
        trial_imports([Code(where=f"{campaign.path}: kernel.heuristic (found beside kernel.source)",
                            target=str(path), is_file=True, written=str(path))])
    from paretotune.kernels.helion_heuristic import load

    with hidden_output(), contextlib.suppress(Exception):  # its errors: default_config says them in a line
        load(Path(path))  # the trial showed what it prints


def captured_context(campaign: Campaign) -> tuple[str | None, list[str]]:
    """Where the captured kernel came from in its program (``kernel.captured``'s record): its module's dotted name,
    so that its file is imported as part of its package (a namespace package too), and the program's
    ``sys.path``, for what that module imports. (None, []) without a record."""
    captured = campaign.spec.kernel.captured
    if captured is None:
        return None, []
    from paretotune.capturing.replay import read_calls

    where = campaign.path.parent / captured
    if not_a_file(where):  # a device or a pipe is never read here: kernel.captured's own check says so
        return None, []
    try:
        doc = read_calls(where)
        module, path = doc["kernel"]["source"].get("module"), doc.get("sys_path", [])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None, []  # kernel.captured's own check says what is wrong with the file
    return (module if isinstance(module, str) else None,
            [p for p in path if isinstance(p, str)] if isinstance(path, list) else [])


def _captured(campaign: Campaign, kernel: Any) -> Any:
    """The spec ``kernel.captured`` makes of the kernel: inputs rebuilt from a capture's recorded calls."""
    from paretotune.capturing.replay import captured_spec

    override = campaign.spec.kernel
    path = (campaign.path.parent / str(override.captured)).resolve()
    where = f"{campaign.path}: kernel.captured"
    problem = not_a_file(path)
    if problem == "missing":
        raise UserError(f"{where}: no such file: {path}")
    if problem:
        raise UserError(f"{where}: {path}: not a regular file ({problem})")
    try:
        return captured_spec(kernel, path, atol=override.atol, rtol=override.rtol)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{where}: {' '.join(str(exc).split())}") from None


def _use_campaign(campaign: Campaign, adapter: Any) -> None:
    """Give a Helion adapter the campaign's shapes, target, kind (GPU or static) and heuristic file."""
    from dataclasses import replace

    from paretotune.kernels.helion import HelionAdapter

    heuristic = campaign.spec.kernel.heuristic
    if not isinstance(adapter, HelionAdapter):
        if heuristic is not None:  # never ignored: the campaign would not run what it says
            raise UserError(f"{campaign.path}: kernel.heuristic: only a Helion kernel has an AOT heuristic; "
                            f"kernel '{adapter.name}' is a {type(adapter).__name__.removesuffix('Adapter')} kernel")
        return
    if heuristic is not None:  # a regular file: make_adapter checked it before any import
        adapter.spec = replace(adapter.spec, heuristic=str((campaign.path.parent / heuristic).resolve()))
    gpu = any(o.stage != "static" for o in make_objectives(campaign))
    adapter.use_campaign(campaign.shapes, campaign.target, gpu)


def _check_shapes(campaign: Campaign, adapter: KernelAdapter) -> None:
    """Each shape through the adapter's factories on the meta device (no memory, no GPU): a missing size or a
    key no factory reads fails here, not per candidate."""
    for i, shape in enumerate(campaign.shapes):
        try:
            adapter.check_shape(shape, adapter.default_config(shape))
        except UnknownShapeKey as exc:
            raise UserError(f"{campaign.path}: shapes[{i}].{exc.key}: kernel '{adapter.name}' has no shape key "
                            f"'{exc.key}' (it reads: {', '.join(exc.read) or 'nothing'})") from None
        except Exception as exc:  # noqa: BLE001 - whatever the kernel's factories raise means a bad shape
            what = f"missing parameter {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
            raise UserError(f"{campaign.path}: shapes[{i}]: kernel '{adapter.name}' cannot make inputs for "
                            f"{shape.params} ({' '.join(what.split())})") from None


def make_objectives(campaign: Campaign) -> list[Objective]:
    from paretotune.objectives.registry import OBJECTIVES

    out = []
    for i, spec in enumerate(campaign.spec.objectives):
        where = f"{campaign.path}: objectives[{i}]"
        cls = OBJECTIVES.get(spec.name)
        if cls is None:
            raise UserError(f"{where}.name: unknown objective '{spec.name}' (known: {', '.join(sorted(OBJECTIVES))})")
        try:
            out.append(cls(**spec.params()))
        except (TypeError, ValueError) as exc:
            named = [p for p in spec.params() if f"'{p}'" in str(exc) or f"{p} " in str(exc)]
            raise UserError(f"{where}{f'.{named[0]}' if named else ''}: {exc}") from None
    seen: dict[str, int] = {}
    for i, obj in enumerate(out):
        if obj.label in seen:
            raise UserError(f"{campaign.path}: objectives[{i}]: '{obj.label}' is listed twice "
                            f"(also objectives[{seen[obj.label]}])")
        seen[obj.label] = i
    return out
