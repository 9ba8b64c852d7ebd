"""A tiny Helion kernel for the CPU child test: Triton's interpreter runs it (it cannot run the bundled Helion
softmax, whose generated code it does not support), so the child is checked with a Helion kernel without a GPU.
The GPU tests use the bundled softmax (``ncu_gpu_kernels.make_helion_launch``)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from paretotune.kernels.helion import import_helion

helion = import_helion()
hl = helion.language


@helion.kernel(static_shapes=True)
def pt_scale(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] * 2
    return out


def make_scale_launch(params: dict[str, Any]) -> Callable[[], Any]:
    """params: n, block, num_warps, device (one fixed config: no autotuning)."""
    x = torch.randn(int(params["n"]), device=params.get("device", "cuda"))
    config = helion.Config(block_sizes=[int(params["block"])], num_warps=int(params["num_warps"]))
    compiled = pt_scale.bind((x,)).compile_config(config, allow_print=False)
    return lambda: compiled(x)
