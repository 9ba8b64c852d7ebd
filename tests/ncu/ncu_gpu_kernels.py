"""Launch factories for the GPU tests (imported by the child under ncu, and by nothing on a CPU machine).

Each factory takes the item's params and returns a zero-argument launch function; inputs are shared per size
so a batch of candidates holds one copy of them.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

_INPUTS: dict[tuple[int, str], tuple[torch.Tensor, torch.Tensor]] = {}


@triton.jit
def _pt_copy(X, Y, N, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    m = o < N
    tl.store(Y + o, tl.load(X + o, mask=m) * 2, mask=m)


@triton.jit
def _pt_oob(X, N, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(X + o + (1 << 40), tl.load(X + o))


def _inputs(n: int, device: str = "cuda") -> tuple[torch.Tensor, torch.Tensor]:
    """Shared per (size, device); ``device="cpu"`` is for Triton's interpreter (TRITON_INTERPRET=1) on CPU."""
    if (n, device) not in _INPUTS:
        x = torch.randn(n, device=device)
        _INPUTS[n, device] = (x, torch.empty_like(x))
    return _INPUTS[n, device]


def make_copy_launch(params: dict[str, Any]) -> Callable[[], None]:
    """params: n, block, num_warps (and device, "cuda" by default)."""
    n, block, warps = int(params["n"]), int(params["block"]), int(params["num_warps"])
    x, y = _inputs(n, params.get("device", "cuda"))
    grid = (triton.cdiv(n, block),)

    def launch() -> None:
        _pt_copy[grid](x, y, n, B=block, num_warps=warps)

    return launch


def make_oob_launch(params: dict[str, Any]) -> Callable[[], None]:
    n = int(params["n"])
    x, _ = _inputs(n)

    def launch() -> None:
        _pt_oob[(triton.cdiv(n, 256),)](x, n, B=256)

    return launch


try:  # Helion is optional for these tests; its kernels must be defined at module level (source inspection)
    import helion
    import helion.language as hl
except ImportError:  # pragma: no cover - depends on the environment
    helion = None

if helion is not None:

    @helion.kernel(static_shapes=True)
    def pt_scale(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        for tile in hl.tile(x.size(0)):
            out[tile] = x[tile] * 2
        return out


def make_helion_launch(params: dict[str, Any]) -> Callable[[], None]:
    """A Helion kernel (Triton kernel ``_helion_pt_scale``) compiled for one fixed config: no autotuning."""
    if helion is None:
        raise ImportError("helion is not installed")
    x, _ = _inputs(int(params["n"]), params.get("device", "cuda"))
    config = helion.Config(block_sizes=[int(params["block"])], num_warps=int(params["num_warps"]))
    compiled = pt_scale.bind((x,)).compile_config(config, allow_print=False)

    def launch() -> None:
        compiled(x)

    return launch
