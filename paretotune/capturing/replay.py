"""A kernel spec from a capture: what ``kernel.captured`` in a campaign turns into.

Each campaign shape is one captured signature (``captured: <signature id>``). Its inputs are rebuilt from
the recorded metadata (:func:`~paretotune.capturing.metadata.rebuild`: seeded random values, or the first
call's values where the capture saved them), its scalars are passed by value, and its baseline is the config
the program ran with:

- Triton: a :class:`~paretotune.kernels.triton.TritonKernel` around the kernel object as the program had it
  (``@triton.autotune`` and ``@triton.heuristics`` included); the baseline per shape is the launch options and
  constexprs the program passed, or the autotuner's pick; the grid is the one the program launched with, per
  config (an autotuner's benchmarking launched each config it tried). The searched configs are the
  autotuner's, else the configs the program used.
- Helion: a :class:`~paretotune.kernels.helion.HelionKernel` over Helion's own ConfigSpec; the baseline per
  shape is the bound kernel's config, through :func:`recorded_config` as an AOT heuristic.

The reference is the baseline build's output on the same inputs (no ``reference`` function).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from paretotune.capturing.metadata import decode_scalar, describe, layout, rebuild
from paretotune.capturing.recorder import FORMAT
from paretotune.compat import torch as compat_torch
from paretotune.kernels.triton_jit import LAUNCH_OPTIONS

SHAPE_KEY = "captured"  # the shape key naming a signature
TRITON_LAUNCH_DEFAULTS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None}
_DOCS: dict[Path, dict[str, Any]] = {}


def read_calls(path: Path) -> dict[str, Any]:
    """A capture's calls file (``calls/<kernel>.json``), read once per process."""
    path = Path(path).resolve()
    if path not in _DOCS:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"cannot read {path} ({exc.strerror})") from None
        except ValueError as exc:
            raise ValueError(f"{path} is not JSON ({exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("signatures"), list) \
                or not doc["signatures"] or doc.get("kernel", {}).get("kind") not in ("triton", "helion"):
            raise ValueError(f"{path} is not a capture's calls file with signatures (format {FORMAT})")
        _DOCS[path] = doc
    return _DOCS[path]


def captured_spec(kernel: Any, path: Path, *, atol: float | None = None, rtol: float | None = None) -> Any:
    """The spec that tunes ``kernel`` (the object ``kernel.source`` names) on the signatures of ``path``."""
    doc = read_calls(path)
    recorded = doc["kernel"]
    fn = getattr(kernel, "fn", None)
    while fn is not None and not hasattr(fn, "__code__") and hasattr(fn, "fn"):
        fn = fn.fn
    name = getattr(fn, "__name__", None)
    if name != recorded["name"]:
        raise ValueError(f"{path} records kernel '{recorded['name']}', but kernel.source names "
                         f"{name and repr(name) or 'a ' + type(kernel).__name__}")
    signatures = {s["id"]: s for s in doc["signatures"]}
    tolerances = {"atol": 1e-2 if atol is None else atol, "rtol": 1e-2 if rtol is None else rtol}
    if recorded["kind"] == "triton":
        return _triton_spec(kernel, signatures, path, tolerances)
    return _helion_spec(kernel, signatures, path, tolerances)


class _Signatures:
    """Signature lookup by a shape's ``captured`` key, and each signature's rebuilt arguments."""

    def __init__(self, signatures: dict[str, dict[str, Any]], path: Path) -> None:
        self.by_id, self.folder = signatures, Path(path).resolve().parent
        self._values: dict[str, list[Any] | None] = {}

    def __call__(self, shape: Mapping[str, Any]) -> dict[str, Any]:
        key = shape[SHAPE_KEY]
        found = self.by_id.get(str(key))
        if found is None:
            raise ValueError(f"{SHAPE_KEY}: {key!r} is none of the captured signatures ({', '.join(self.by_id)})")
        return found

    def values(self, signature: dict[str, Any]) -> list[Any] | None:
        """The first call's tensors, where the capture saved them (``--values``)."""
        rel = signature.get("values")
        if not rel:
            return None
        if rel not in self._values:
            import torch

            self._values[rel] = torch.load(self.folder / rel, weights_only=True)
        return self._values[rel]


def _triton_spec(kernel: Any, signatures: dict[str, dict[str, Any]], path: Path, tolerances: dict[str, float]) -> Any:
    from triton.runtime.jit import KernelInterface

    from paretotune.kernels.triton import TritonKernel
    from paretotune.kernels.triton_jit import unwrap

    if not isinstance(kernel, KernelInterface):
        raise TypeError(f"{path} records a Triton kernel; kernel.source names a {type(kernel).__name__}")
    lookup = _Signatures(signatures, path)
    autotuned = unwrap(kernel).autotuner is not None

    def inputs(shape: Mapping[str, Any], device: str, seed: int) -> dict[str, Any]:
        sig = lookup(shape)
        names = list(sig["args"])
        leaves = [sig["args"][n] for n in names]
        built = rebuild(leaves, device, seed, lookup.values(sig))
        return {n: v for n, v, leaf in zip(names, built, leaves, strict=True) if "tensor" in leaf}

    def args(made: dict[str, Any], shape: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        return {n: decode_scalar(leaf) for n, leaf in lookup(shape)["args"].items() if "tensor" not in leaf}

    def grid(shape: Mapping[str, Any], config: Mapping[str, Any]) -> tuple[int, ...]:
        return grid_for(lookup(shape), config)

    configs: list[dict[str, Any]] = []
    for sig in signatures.values():
        if sig["config"] not in configs:
            configs.append(dict(sig["config"]))
    written = [n for sig in signatures.values() for n, leaf in sig["args"].items()
               if leaf.get("tensor", {}).get("written")]
    return TritonKernel(kernel, inputs=inputs, grid=grid, args=args, output=written[0] if written else None,
                        space=None if autotuned or configs == [{}] else configs,
                        default=lambda shape: dict(lookup(shape)["config"]), **tolerances)


def grid_for(signature: dict[str, Any], config: Mapping[str, Any]) -> tuple[int, ...]:
    """The grid the program launched ``config`` with for this signature (the grid of a config that differs
    only in launch options if that one was never launched: grids depend on block sizes, not on warps)."""
    launches = signature.get("launches") or []

    def agrees(launch: dict[str, Any], keys: set[str]) -> bool:
        # a constexpr the launch record lacks (Liger passes casting_mode by keyword: the config has it, the
        # launch's record of its constexprs does not) says nothing against it; launch options have defaults
        given = launch["config"]
        return all(given.get(k, TRITON_LAUNCH_DEFAULTS.get(k)) == config.get(k, TRITON_LAUNCH_DEFAULTS.get(k))
                   for k in keys if k in given or k in LAUNCH_OPTIONS)

    for keys in (set(config), {k for k in config if k not in LAUNCH_OPTIONS}):
        found = [launch for launch in launches if agrees(launch, keys)]
        if found:
            return tuple(found[0]["grid"])
    known = "; ".join(json.dumps(launch["config"]) for launch in launches) or "none"
    raise ValueError(f"the program never launched config {dict(config)} for this signature, so its grid is "
                     f"unknown (launched: {known})")


def _helion_spec(kernel: Any, signatures: dict[str, dict[str, Any]], path: Path, tolerances: dict[str, float]) -> Any:
    from paretotune.kernels.helion import HelionKernel, import_helion

    if not isinstance(kernel, import_helion().Kernel):
        raise TypeError(f"{path} records a Helion kernel; kernel.source names a {type(kernel).__name__}")
    lookup = _Signatures(signatures, path)

    def inputs(shape: Mapping[str, Any], device: str, seed: int) -> dict[str, Any]:
        sig = lookup(shape)
        return {"args": rebuild_args(sig["args"], device, seed, lookup.values(sig))}

    written = sorted({i for sig in signatures.values() for i, arg in enumerate(sig["args"])
                      if any(leaf.get("tensor", {}).get("written") for leaf in _arg_leaves(arg))})
    configs = [sig.get("config") for sig in signatures.values()]
    common = configs[0] if configs[0] is not None and all(c == configs[0] for c in configs) else None
    return HelionKernel(fn=kernel, inputs=inputs, args=lambda made, shape: made["args"], default=common,
                        outputs=tuple(written), **tolerances)


def _arg_leaves(arg: dict[str, Any]) -> list[dict[str, Any]]:
    return arg["leaves"] if "leaves" in arg else [arg]


def rebuild_args(args: list[dict[str, Any]], device: str, seed: int, values: list[Any] | None) -> tuple[Any, ...]:
    """Helion's positional arguments (lists, tuples and dicts of tensors rebuilt as such)."""
    leaves = [leaf for arg in args for leaf in _arg_leaves(arg)]
    built = rebuild(leaves, device, seed, values)
    out, i = [], 0
    for arg in args:
        if "leaves" in arg:
            count = len(arg["leaves"])
            out.append(compat_torch.tree_unflatten(built[i:i + count], compat_torch.treespec_loads(arg["tree"])))
            i += count
        else:
            out.append(built[i])
            i += 1
    return tuple(out)


def recorded_config(heuristic_file: str, args: tuple[Any, ...]) -> dict[str, Any]:
    """The config the program ran with for the signature ``args`` have (the body of a capture's generated
    ``calls/<kernel>.heuristic.py``: ``autotune_<kernel>(*args)``)."""
    import torch

    path = Path(heuristic_file)
    doc = read_calls(path.with_name(path.name.removesuffix(".heuristic.py") + ".json"))
    if not any(isinstance(a, torch.Tensor) for a in compat_torch.tree_leaves(list(args))):
        # a kernel with a user key (aot_kernel(key=...)): Helion calls its heuristic with the key's flattened values
        for sig in doc["signatures"]:
            if sig.get("user_key") == list(args) and sig.get("config"):
                return dict(sig["config"])
    wanted = [layout(leaf) for leaf in describe(compat_torch.tree_leaves(list(args)))]
    for sig in doc["signatures"]:
        if [layout(leaf) for arg in sig["args"] for leaf in _arg_leaves(arg)] == wanted and sig.get("config"):
            return dict(sig["config"])
    raise ValueError(f"{path}: no captured signature of {doc['kernel']['name']} has these arguments")
