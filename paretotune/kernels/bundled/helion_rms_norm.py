"""RMS normalization in Helion (the forward of helion's ``examples/rms_norm.py``, returning only ``out``).

``out = x / sqrt(mean(x²) + eps) * weight`` per row, reduced in fp32. Knobs as for the Helion softmax (``ROW_SPACE``):
rows per program, an optional loop over the row, warps, stages and the program-id mapping.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from paretotune.kernels.bundled.helion_softmax import ROW_DEFAULT, ROW_SPACE
from paretotune.kernels.helion import HelionKernel, import_helion

helion = import_helion()
hl = helion.language


@helion.kernel(static_shapes=True)
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    rows, cols = x.size()
    assert weight.size(0) == cols, f"weight size mismatch {weight.size(0)} != {cols}"
    out = torch.empty_like(x)
    for tile_rows in hl.tile(rows):
        x_tile = x[tile_rows, :].to(torch.float32)
        inv_rms = torch.rsqrt(torch.mean(x_tile * x_tile, dim=-1) + eps)
        out[tile_rows, :] = (x_tile * inv_rms[:, None] * weight[:].to(torch.float32)).to(out.dtype)
    return out


def _inputs(shape: Mapping[str, Any], device: str, seed: int) -> dict[str, Any]:
    m, n = int(shape["M"]), int(shape["N"])
    dtype = getattr(torch, shape.get("dtype", "bfloat16"))
    if device == "meta":
        return {"x": torch.empty(m, n, dtype=dtype, device="meta"), "w": torch.empty(n, dtype=dtype, device="meta")}
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(m, n, dtype=dtype, device=device, generator=gen)
    w = torch.rand(n, dtype=dtype, device=device, generator=gen) + 0.5
    return {"x": x, "w": w}


def _reference(t: dict[str, Any]) -> torch.Tensor:
    x = t["x"].float()
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * t["w"].float()).to(t["x"].dtype)


helion_rms_norm = HelionKernel(
    fn=rms_norm,
    inputs=_inputs,
    args=lambda t, shape: (t["x"], t["w"], 1e-5),
    reference=_reference,
    space=dict(ROW_SPACE),
    default=dict(ROW_DEFAULT),
    atol=2e-2,  # bf16 output: one ulp at |y| ~ 4 is 0.03
    rtol=1e-2,
    shapes={"llm": {"M": 2048, "N": 4096}, "wide": {"M": 2048, "N": 8192}},
)
