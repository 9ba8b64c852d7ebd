"""Which adapter handles which kernel spec object."""
from __future__ import annotations

from typing import Any

from paretotune.errors import UserError
from paretotune.kernels.base import KernelAdapter


def adapter_for(obj: Any, name: str, where: str, *, as_object: bool = False) -> KernelAdapter:
    """The adapter of a kernel spec object; else a one-line error. ``as_object``: the caller passed the kernel as
    a Python object (the API), not a name in a campaign file, so the advice is to pass a spec instead."""
    from paretotune.kernels.triton import TritonAdapter, TritonKernel

    if isinstance(obj, TritonKernel):
        return TritonAdapter(name, obj)
    try:
        from paretotune.kernels.helion import HelionAdapter, HelionKernel
    except ImportError:  # helion adapter not installed/importable
        HelionKernel = None  # type: ignore[assignment,misc]
    if HelionKernel is not None and isinstance(obj, HelionKernel):
        return HelionAdapter(name, obj)
    if _is_triton_kernel(obj) and as_object:
        raise UserError(f"{where}: '{name}' is a bare Triton kernel: paretotune also needs its inputs and grid; pass "
                        f"`paretotune.TritonKernel({name}, inputs=lambda shape: {{...tensors...}}, "
                        "grid=lambda meta: (...))` instead (docs/kernels.md)")
    if _is_triton_kernel(obj):
        raise UserError(f"{where}: '{name}' is a bare Triton kernel: paretotune also needs its inputs and grid; add "
                        f"`{name}_spec = paretotune.TritonKernel({name}, inputs=lambda shape: {{...tensors...}}, "
                        f"grid=lambda meta: (...))` next to it and name {name}_spec (docs/kernels.md)")
    raise UserError(f"{where}: '{name}' is a {type(obj).__name__}, not a TritonKernel or HelionKernel spec")


def _is_triton_kernel(obj: Any) -> bool:
    """A ``@triton.jit``, ``@triton.autotune`` or ``@triton.heuristics`` function."""
    try:
        from triton.runtime.jit import KernelInterface
    except ImportError:
        return False
    return isinstance(obj, KernelInterface)
