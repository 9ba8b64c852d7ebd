"""What the first call of a signature did: its arguments as metadata, which of them it wrote, the config it ran
with, the grid of each Triton launch it made and (Helion) what it returned.

:func:`begin` runs before the call (it splits a Triton call into arguments and the caller's config and clones
every tensor argument), :func:`note_launch` at each Triton launch inside the call, :func:`finish` after it
(an argument whose contents changed was written: NaNs compare equal to NaNs).
"""
from __future__ import annotations

import hashlib
import inspect
import json
from dataclasses import dataclass, field
from typing import Any

from paretotune.capturing.kernel_info import KernelInfo
from paretotune.capturing.metadata import Undescribable, describe, describe_scalar
from paretotune.compat import helion as compat_helion
from paretotune.compat import torch as compat_torch
from paretotune.kernels.triton_jit import LAUNCH_OPTIONS, config_dict

NOT_ARGS = ("grid", "warmup")  # keyword arguments of Triton's run that are not the kernel's


@dataclass
class FirstCall:
    """What the first call of a signature needs between its start and its end."""

    info: KernelInfo
    leaves: list[Any]  # Triton: the arguments by parameter (not the config); Helion: all leaves, flattened
    clones: list[Any] | None  # each tensor leaf before the call (None: not a tensor; all None: out of memory)
    names: list[str] = field(default_factory=list)  # Triton: the parameter of each leaf
    config: dict[str, Any] = field(default_factory=dict)  # Triton: the constexprs and launch options passed
    config_keys: frozenset[str] = frozenset()  # Triton: what tells one launched config from another
    launches: dict[str, tuple[dict[str, Any], list[int]]] = field(default_factory=dict)  # config -> grid
    tree: list[tuple[Any, int]] = field(default_factory=list)  # Helion: (treespec or None, leaf count) per arg
    normalized: tuple[Any, ...] = ()  # Helion: the positional arguments, defaults filled


def begin(info: KernelInfo, args: tuple[Any, ...], kwargs: dict[str, Any]) -> FirstCall:
    """Before the call: its arguments, checked (:class:`Undescribable` for one that is neither a tensor nor a
    plain value, or a launch option a campaign cannot set), and a copy of each tensor among them."""
    if info.kind == "triton":
        named, config, extra = _triton_split(info, args, kwargs)
        if extra:
            raise Undescribable(f"passes {', '.join(f'{k}={v!r}' for k, v in extra.items())}, which a campaign "
                                "cannot set (only num_warps, num_stages, num_ctas, maxnreg)")
        for name, value in named.items():
            _check_leaf(value, f"argument '{name}'")
        leaves = list(named.values())
        return FirstCall(info, leaves, _clones(leaves), names=list(named), config=config,
                         config_keys=info.tuned | frozenset(config))
    normalized = tuple(info.obj.normalize_args(*args, **kwargs))
    leaves, tree = [], []
    for position, arg in enumerate(normalized):
        flat, spec = compat_torch.tree_flatten(arg)
        name = f" ({info.params[position]})" if position < len(info.params) else ""
        for value in flat:
            _check_leaf(value, f"argument {position}{name}")
        tree.append((None if len(flat) == 1 and flat[0] is arg else compat_torch.treespec_dumps(spec), len(flat)))
        leaves.extend(flat)
    return FirstCall(info, leaves, _clones(leaves), tree=tree, normalized=normalized)


def note_launch(frame: FirstCall, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The grid of one Triton launch inside a first call, by the config it launched with (an autotuner's
    benchmarking launches each config it tries: the campaign then has a grid for each)."""
    if frame.info.kind != "triton":
        return
    try:
        grid = kwargs.get("grid")
        if callable(grid):
            grid = grid(bind(frame.info, args, kwargs))
        grid = [int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,))]
        config = {k: v for k, v in kwargs.items() if k in LAUNCH_OPTIONS or k in frame.config_keys}
        frame.launches[json.dumps(config, sort_keys=True, default=repr)] = (config, grid)
    except Exception:  # noqa: BLE001 - a grid it cannot evaluate is left out; the replay says so if it is needed
        return


def finish(frame: FirstCall, result: Any) -> dict[str, Any]:
    """After the call: the signature's description (``id``, ``args``, ``config``; Triton ``launches``, Helion
    ``returned``)."""
    info = frame.info
    leaves = describe(frame.leaves)
    _mark_written(leaves, frame.leaves, frame.clones)
    doc: dict[str, Any]
    if info.kind == "triton":
        config = config_dict(info.autotuner.best_config) if info.autotuner is not None else dict(frame.config)
        doc = {"args": dict(zip(frame.names, leaves, strict=True)), "config": _json_safe(config, "config"),
               "launches": [{"config": c, "grid": g} for c, g in frame.launches.values()]}
    else:
        doc = {"args": _regroup(leaves, frame.tree), "config": _helion_config(info.obj, frame.normalized),
               "returned": _returned(result, frame.leaves)}
        if compat_helion.aot_user_key(info.obj) is not None:  # Helion asks its heuristic with these values
            from paretotune.kernels.helion_heuristic import key_values

            doc["user_key"] = list(key_values(info.obj, frame.normalized))
    doc["id"] = signature_id(doc)
    return doc


def signature_id(doc: dict[str, Any]) -> str:
    """A short stable id of a signature: a hash of its arguments' layouts and values and its config."""
    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in ("written", "range", "device")}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    text = json.dumps(strip({"args": doc["args"], "config": doc.get("config")}), sort_keys=True, default=repr)
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def bind(info: KernelInfo, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Parameter name -> value as the call gave them, defaults filled (what Triton hands a grid function)."""
    given = {k: v for k, v in kwargs.items() if k in info.params}
    bound = inspect.signature(info.fn).bind_partial(*args, **given).arguments
    return {**{k: v for k, v in info.defaults.items() if k not in bound}, **dict(bound)}


def _triton_split(info: KernelInfo, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[
        dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(arguments by parameter name, the caller's config: constexprs and launch options, unsupported kwargs).
    Under an autotuner the config is its pick, so the caller's other constexprs are passed as arguments."""
    bound = bind(info, args, kwargs)
    named: dict[str, Any] = {}
    config: dict[str, Any] = {}
    for name in info.params:
        if name in info.tuned or name not in bound:
            continue
        value = bound[name]
        plain = value is None or type(value) in (bool, int, float, str)
        if name in info.constexprs and info.autotuner is None and plain:
            config[name] = value
        else:
            named[name] = value
    extra = {}
    for key, value in kwargs.items():
        if key in NOT_ARGS or key in info.params:
            continue
        if key in LAUNCH_OPTIONS and info.autotuner is None:
            config[key] = value
        else:
            extra[key] = value
    return named, config, extra


def _check_leaf(value: Any, where: str) -> None:
    """Raise :class:`Undescribable` naming ``where`` for a leaf that is neither a tensor nor a plain value."""
    import torch

    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided:
            raise Undescribable(f"{where} is a {value.layout} tensor (only strided tensors are rebuilt)")
        return
    try:
        describe_scalar(value)
    except Undescribable as exc:
        raise Undescribable(f"{where} is {exc}") from None


def _clones(leaves: list[Any]) -> list[Any] | None:
    """A copy of every tensor argument before the call (None where a leaf is no tensor); None if the copies do
    not fit in memory (then which arguments the call wrote is not known)."""
    import torch

    try:
        return [x.detach().clone() if isinstance(x, torch.Tensor) else None for x in leaves]
    except RuntimeError:  # out of memory: the program's own allocations come first
        return None


def _mark_written(described: list[dict[str, Any]], live: list[Any], clones: list[Any] | None) -> None:
    """``written`` on each tensor leaf (whether the call changed it), ``range`` of each integer tensor as the
    call saw it."""
    import torch

    for leaf, now, before in zip(described, live, clones or [None] * len(live), strict=True):
        if "tensor" not in leaf or before is None:
            continue
        same = torch.equal(now, before)
        if not same and (now.dtype.is_floating_point or now.dtype.is_complex):
            same = bool(((now == before) | (now.isnan() & before.isnan())).all())
        leaf["tensor"]["written"] = not same
        if not (before.dtype.is_floating_point or before.dtype.is_complex) and before.numel():
            leaf["tensor"]["range"] = [int(before.min()), int(before.max())]


def _regroup(leaves: list[dict[str, Any]], tree: list[tuple[Any, int]]) -> list[dict[str, Any]]:
    """Helion's positional arguments: a leaf each, or ``{"tree": treespec, "leaves": [...]}`` for a list,
    tuple or dict argument."""
    out, i = [], 0
    for spec, count in tree:
        chunk = leaves[i:i + count]
        out.append(chunk[0] if spec is None else {"tree": spec, "leaves": chunk})
        i += count
    return out


def _returned(result: Any, inputs: list[Any]) -> list[dict[str, Any]]:
    """What a Helion kernel returned: each tensor's layout, and which argument leaf it is if it is one."""
    import torch
    out = []
    for value in compat_torch.tree_leaves(result):
        if isinstance(value, torch.Tensor):
            same = next((i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x is value), None)
            out.append({"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch."),
                        "stride": list(value.stride()), "argument": same})
    return out


def _helion_config(kernel: Any, args: tuple[Any, ...]) -> dict[str, Any] | None:
    """The config Helion's bound kernel ran with (its autotuner's pick, the AOT heuristic's, the decorator's,
    or its default); None where the bound kernel holds none."""
    config = compat_helion.bound_config(kernel.bind(tuple(args)))
    if config is None:
        return None
    found = {k: v for k, v in dict(config).items() if k != "advanced_controls_file"}
    return _json_safe(found, "Helion config")


def _json_safe(value: dict[str, Any], what: str) -> dict[str, Any]:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        raise Undescribable(f"a {what} that is not plain data ({value!r})") from None
    return value
