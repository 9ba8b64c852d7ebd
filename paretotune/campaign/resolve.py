"""Resolve a loaded campaign's names to objects: the kernel adapter (user code imported, knobs, default and
shapes checked) and the objectives (parameters checked). ``start_run`` calls both before it creates the run
directory, so a typo never costs a compile; every message names the file and the field."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paretotune.campaign.load import Campaign
from paretotune.campaign.user_code import import_object
from paretotune.errors import UserError
from paretotune.kernels.base import KernelAdapter, UnknownShapeKey, validate_config
from paretotune.objectives.base import Objective


def make_adapter(campaign: Campaign, *, trial_import: bool = False,
                 after_trial: Callable[[], None] | None = None) -> KernelAdapter:
    """Instantiate the adapter for the kernel spec object the campaign names (Triton or Helion).
    ``trial_import``: import user code in a child first (the CLI's first look at a campaign does);
    ``after_trial``: called once the kernel passed it (see :func:`~paretotune.campaign.user_code.import_object`)."""
    from paretotune.kernels.registry import adapter_for

    where = f"{campaign.path}: kernel.source"
    override = campaign.spec.kernel
    module, program_path = captured_context(campaign)
    obj = import_object(override.source, campaign.path.parent, where, trial=trial_import, after_trial=after_trial,
                        module=module, program_path=program_path)
    if override.inputs is not None:
        from paretotune.kernels.helion import spec_from_kernel

        factory = import_object(override.inputs, campaign.path.parent, f"{campaign.path}: kernel.inputs")
        try:
            obj = spec_from_kernel(obj, factory, atol=override.atol, rtol=override.rtol)
        except TypeError as exc:
            raise UserError(f"{where}: {exc}") from None
    if override.captured is not None:
        obj = _captured(campaign, obj)
    from paretotune.kernels.inline import MODULE as INLINE

    adapter = adapter_for(obj, override.source.rpartition(":")[2], where,
                          as_object=override.source.startswith(f"{INLINE}:"))
    _use_campaign(campaign, adapter)
    restrict = getattr(adapter, "restrict_to", None)
    if restrict is not None:  # e.g. an autotuned kernel's configs that its pruning drops on every shape
        try:
            restrict(campaign.shapes)
        except Exception as exc:  # noqa: BLE001 - the kernel's own prune function or input factory failed
            raise UserError(f"{where}: pruning the kernel's configs for the campaign's shapes failed "
                            f"({type(exc).__name__}: {exc})") from None
    if override.space:
        from paretotune.search.space import CONFIG_LIST_KNOB

        known = adapter.space()
        in_list = {k for c in known.get(CONFIG_LIST_KNOB, []) if isinstance(c, dict) for k in c}
        for key in override.space:
            if key not in known and key not in in_list:
                raise UserError(f"{campaign.path}: kernel.space.{key}: unknown kernel knob '{key}' "
                                f"(known: {', '.join(sorted(set(known) - {CONFIG_LIST_KNOB} | in_list))})")
        if CONFIG_LIST_KNOB in known:
            from paretotune.kernels.overrides import OverriddenAdapter

            left = OverriddenAdapter(adapter, space=override.space, default=None).space().get(CONFIG_LIST_KNOB)
            if left is not None and not left:
                raise UserError(f"{campaign.path}: kernel.space: no listed config of the kernel has these values")
    if override.space or override.default:
        from paretotune.kernels.overrides import OverriddenAdapter

        adapter = OverriddenAdapter(adapter, space=override.space, default=override.default)
    try:
        adapter.check_space(adapter.space())
    except ValueError as exc:
        raise UserError(f"{campaign.path}: kernel.space.{exc}") from None
    _check_shapes(campaign, adapter)
    from paretotune.kernels.helion import HelionAdapter

    inner = getattr(adapter, "inner", adapter)
    derived = isinstance(inner, HelionAdapter) and inner.spec.space is None
    if not derived or override.default or override.space:
        # a Helion ConfigSpec space holds every shape's baseline by construction: other spaces are checked
        for shape in campaign.shapes:
            validate_config(adapter.space(), adapter.default_config(shape), f"{campaign.path}: kernel.default")
    return adapter


def captured_context(campaign: Campaign) -> tuple[str | None, list[str]]:
    """Where the captured kernel came from in its program (``kernel.captured``'s record): its module's dotted name,
    so that its file is imported as part of its package (a namespace package too), and the program's
    ``sys.path``, for what that module imports. (None, []) without a record."""
    captured = campaign.spec.kernel.captured
    if captured is None:
        return None, []
    from paretotune.capturing.replay import read_calls

    try:
        doc = read_calls(campaign.path.parent / captured)
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
    if not path.is_file():
        raise UserError(f"{where}: no such file: {path}")
    try:
        return captured_spec(kernel, path, atol=override.atol, rtol=override.rtol)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{where}: {' '.join(str(exc).split())}") from None


def _use_campaign(campaign: Campaign, adapter: Any) -> None:
    """Give a Helion adapter the campaign's shapes, target, kind (GPU or static) and heuristic file."""
    from dataclasses import replace

    from paretotune.kernels.helion import HelionAdapter

    if not isinstance(adapter, HelionAdapter):
        return
    heuristic = campaign.spec.kernel.heuristic
    if heuristic is not None:
        path = (campaign.path.parent / heuristic).resolve()
        if not path.is_file():
            raise UserError(f"{campaign.path}: kernel.heuristic: no such file: {path}")
        adapter.spec = replace(adapter.spec, heuristic=str(path))
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
