"""Row softmax in Helion (the kernel of helion's ``examples/softmax.py``): rows tiled, each row reduced whole.

Knobs: rows per program (``block_sizes``), an optional loop over the row (``reduction_loops``; ``None`` keeps
the whole row in registers), warps, stages and the program-id mapping (``pid_type``; the persistent ones
size their grid by the SM count). Pointer indexing only: see :mod:`paretotune.kernels.helion`.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from paretotune.kernels.helion import HelionKernel, import_helion

helion = import_helion()
hl = helion.language


@helion.kernel(static_shapes=True)
def softmax(x: torch.Tensor) -> torch.Tensor:
    rows, _cols = x.size()
    out = torch.empty_like(x)
    for tile_rows in hl.tile(rows):
        out[tile_rows, :] = torch.nn.functional.softmax(x[tile_rows, :], dim=1)
    return out


# Knobs of a Helion kernel that tiles rows and reduces each row whole (this softmax, the RMS norm): rows per
# program, an optional loop over the row, warps, stages, program-id mapping. At most 64 fp32 values per thread
# for N=4096 (rows × loop width / threads): compiles stay ~1 s on a CPU.
ROW_SPACE: dict[str, list[Any]] = {
    "block_sizes": [[1], [2], [4]],
    "reduction_loops": [[None], [512], [1024]],
    "num_warps": [4, 8, 16],
    "num_stages": [1, 2, 3],
    "pid_type": ["flat", "persistent_blocked", "persistent_interleaved"],
}
ROW_DEFAULT: dict[str, Any] = {"block_sizes": [1], "reduction_loops": [None], "num_warps": 8, "num_stages": 2,
                               "pid_type": "flat"}


def _inputs(shape: Mapping[str, Any], device: str, seed: int) -> dict[str, Any]:
    m, n = int(shape["M"]), int(shape["N"])
    dtype = getattr(torch, shape.get("dtype", "float16"))
    if device == "meta":
        return {"x": torch.empty(m, n, dtype=dtype, device="meta")}
    gen = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn(m, n, dtype=dtype, device=device, generator=gen) * 4}


helion_softmax = HelionKernel(
    fn=softmax,
    inputs=_inputs,
    args=lambda t, shape: (t["x"],),
    reference=lambda t: torch.softmax(t["x"].float(), dim=-1).to(t["x"].dtype),
    space=dict(ROW_SPACE),
    default=dict(ROW_DEFAULT),
    atol=1e-3,
    rtol=1e-2,
    shapes={"square": {"M": 4096, "N": 4096}, "rect": {"M": 2048, "N": 2560}},
)
