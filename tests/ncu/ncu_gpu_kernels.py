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


def make_helion_launch(params: dict[str, Any]) -> Callable[[], None]:
    """The bundled Helion softmax (Triton kernel ``_helion_softmax``) for one fixed config: no autotuning.

    Built through :class:`HelionAdapter.prepare`, the path GPU campaigns use. params: rows, cols, block
    (rows per program), num_warps.
    """
    from paretotune.kernels.bundled.helion_softmax import helion_softmax
    from paretotune.kernels.helion import HelionAdapter
    from paretotune.records import Shape

    adapter = HelionAdapter("helion_softmax", helion_softmax)
    shape = Shape(label="s", params={"M": int(params["rows"]), "N": int(params["cols"]), "dtype": "float16"})
    config = {**adapter.default_config(shape), "block_sizes": [int(params["block"])],
              "num_warps": int(params["num_warps"])}
    return adapter.prepare(config, shape, None, adapter.make_inputs(shape, params.get("device", "cuda"), 0)).launch
