"""A captured call's arguments as JSON, and tensors rebuilt from it.

Each argument leaf is one JSON object: ``{"tensor": {...}}`` (shape, stride, dtype, device, storage offset,
which storage it shares, the value range of an integer tensor), ``{"value": x}`` (None, bool, int, str or a
finite float), ``{"float": "inf"}``, ``{"torch_dtype": "float16"}`` or ``{"tl_dtype": "fp16"}``. Rebuilt
tensors have the recorded shape, dtype, strides and storage offset (so the alignment Triton specializes on
is the program's), and arguments that shared storage in the program share it again (an in-place kernel given
the same tensor twice writes what it reads).

Why offsets are kept modulo 256 bytes of the lowest view of a storage: a view deep into a large buffer (a
layer's slice of a KV cache) is rebuilt without allocating the whole buffer, and keeps its alignment.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

ALIGN = 256  # bytes: a rebuilt storage starts at this alignment, like the CUDA caching allocator's blocks
SCALARS = (bool, int, float, str)
_Tensor: Any = None  # torch.Tensor, looked up on the first key (importing this module does not import torch)


class Undescribable(ValueError):
    """An argument the capture cannot record as metadata (the kernel is listed with this reason, not tuned)."""


def leaf_key(x: Any) -> Hashable:
    """A cheap hashable key of one argument for telling signatures apart on every call: a tensor's dtype,
    shape, strides, device and 16-byte alignment (what Triton specializes on), a scalar's type and value.
    Every call of a captured kernel pays for this (``get_device`` and ``is_meta`` cost a third of ``device``)."""
    global _Tensor
    if _Tensor is None:
        import torch

        _Tensor = torch.Tensor
    kind = type(x)
    if kind is _Tensor or isinstance(x, _Tensor):
        meta = x.is_meta
        return (x.dtype, x.shape, x.stride(), x.get_device(), meta, meta or x.data_ptr() % 16 == 0)
    if kind is float:
        return (kind, x if x == x else "nan")
    if x is None or kind in SCALARS:
        return (kind, x)
    if isinstance(x, (tuple, list)):
        return (kind, tuple(leaf_key(v) for v in x))
    if isinstance(x, dict):
        return (kind, tuple((k, leaf_key(v)) for k, v in x.items()))
    return (kind, repr(x))


def describe(leaves: Sequence[Any], *, ranges: bool = False) -> list[dict[str, Any]]:
    """The JSON form of each leaf; tensors sharing a storage get one ``storage`` number. ``ranges``: also the
    [min, max] of every integer and bool tensor (index tensors rebuilt in range; one sync)."""
    import torch

    groups: dict[int, int] = {}  # storage data_ptr -> group number
    tensors: list[tuple[int, Any, int]] = []  # (leaf index, tensor, group)
    out: list[dict[str, Any]] = []
    for i, x in enumerate(leaves):
        if isinstance(x, torch.Tensor):
            if x.layout != torch.strided:
                raise Undescribable(f"a {x.layout} tensor (only strided tensors are rebuilt)")
            key = -1 - i if x.device.type == "meta" else x.untyped_storage().data_ptr()
            group = groups.setdefault(key, len(groups))
            tensors.append((i, x, group))
            out.append({})
        else:
            out.append(describe_scalar(x))
    base: dict[int, int] = {}
    for _, x, group in tensors:
        start = x.storage_offset() * x.element_size()
        base[group] = min(base.get(group, start), start - start % ALIGN)
    for i, x, group in tensors:
        offset = (x.storage_offset() * x.element_size() - base[group]) // x.element_size()
        meta: dict[str, Any] = {"shape": list(x.shape), "stride": list(x.stride()), "dtype": dtype_name(x.dtype),
                                "device": str(x.device), "offset": offset, "storage": group}
        if ranges and (not x.dtype.is_floating_point and not x.dtype.is_complex) and x.numel() and \
                x.device.type != "meta":
            meta["range"] = [int(x.min()), int(x.max())]
        out[i] = {"tensor": meta}
    return out


def describe_scalar(x: Any) -> dict[str, Any]:
    """A non-tensor argument as JSON, or :class:`Undescribable`."""
    import torch

    value = getattr(x, "value", x) if type(x).__name__ == "constexpr" else x  # tl.constexpr(...) passed by hand
    if value is None or type(value) in (bool, int, str):
        return {"value": value}
    if type(value) is float:
        return {"value": value} if math.isfinite(value) else {"float": repr(value)}
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        return describe_scalar(value.item())
    if isinstance(value, torch.dtype):
        return {"torch_dtype": dtype_name(value)}
    if type(value).__module__.startswith("triton.language") and type(value).__name__ == "dtype":
        return {"tl_dtype": str(value)}
    raise Undescribable(f"a {type(value).__module__}.{type(value).__qualname__}")


def decode_scalar(leaf: dict[str, Any]) -> Any:
    """The value a non-tensor leaf stands for."""
    if "value" in leaf:
        return leaf["value"]
    if "float" in leaf:
        return float(leaf["float"])
    if "torch_dtype" in leaf:
        return torch_dtype(leaf["torch_dtype"])
    if "tl_dtype" in leaf:
        import triton.language as tl

        return tl.dtype(leaf["tl_dtype"])
    raise ValueError(f"not an argument leaf: {leaf!r}")


def dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def torch_dtype(name: str) -> Any:
    import torch

    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown torch dtype {name!r}")
    return dtype


def _extent(shape: Sequence[int], stride: Sequence[int]) -> int:
    """Elements a strided view spans from its first element (0 for an empty tensor)."""
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((s - 1) * st for s, st in zip(shape, stride, strict=True))


def rebuild(leaves: Sequence[dict[str, Any]], device: str, seed: int,
            values: Sequence[Any] | None = None) -> list[Any]:
    """Arguments from their JSON form on ``device``: tensors with the recorded layout, filled with ``values``
    (the first call's, aligned with ``leaves``) or seeded random ones (normal floats; integers uniform in the
    recorded range, else in [0, 16)); scalars by value. On ``meta`` only layouts are made."""
    import torch

    sizes: dict[int, int] = {}
    for leaf in leaves:
        if "tensor" in leaf:
            t = leaf["tensor"]
            size = torch_dtype(t["dtype"]).itemsize
            end = (t["offset"] + _extent(t["shape"], t["stride"])) * size
            sizes[t["storage"]] = max(sizes.get(t["storage"], 0), end)
    storages = {g: torch.empty(max(n, 1), dtype=torch.uint8, device=device).untyped_storage()
                for g, n in sizes.items()}
    generator = None if device == "meta" else torch.Generator(device=device).manual_seed(seed)
    out: list[Any] = []
    for i, leaf in enumerate(leaves):
        if "tensor" not in leaf:
            out.append(decode_scalar(leaf))
            continue
        t = leaf["tensor"]
        dtype = torch_dtype(t["dtype"])
        view = torch.empty(0, dtype=dtype, device=device).set_(storages[t["storage"]], t["offset"], t["shape"],
                                                                t["stride"])
        if generator is not None and view.numel():
            given = values[i] if values is not None else None
            # an expanded view (a broadcast scale: a stride of 0) shares elements, and a copy into it is refused
            # (Helion's fp8_matmul example has one): fill what it is expanded from
            base = tuple(slice(0, 1) if st == 0 else slice(None) for st in t["stride"])
            target = view[base]
            target.copy_(given.to(device)[base] if given is not None else
                         _random(t, list(target.shape), dtype, device, generator))
        out.append(view)
    return out


def _random(meta: dict[str, Any], shape: list[int], dtype: Any, device: str, generator: Any) -> Any:
    import torch

    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dtype)
    low, high = meta.get("range", [0, 15])
    if dtype == torch.bool:
        low, high = max(0, low), min(1, high)
    return torch.randint(low, high + 1, shape, generator=generator, device=device, dtype=torch.int64).to(dtype)


def layout(leaf: dict[str, Any]) -> Hashable:
    """What identifies a leaf's signature regardless of device, storage and values: a tensor's dtype, shape
    and strides, a scalar's value."""
    if "tensor" in leaf:
        t = leaf["tensor"]
        return ("tensor", t["dtype"], tuple(t["shape"]), tuple(t["stride"]))
    return ("scalar", repr(decode_scalar(leaf)))
