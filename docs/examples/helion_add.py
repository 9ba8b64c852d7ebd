"""A Helion kernel: Helion writes the Triton code, paretotune searches its helion.Config knobs and ACFs."""
import helion
import helion.language as hl
import torch

from paretotune import HelionKernel


@helion.kernel(static_shapes=True)
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(out.size()):
        out[tile] = x[tile] + y[tile]
    return out


def add_inputs(shape, device, seed):
    n = shape["n"]
    if device == "meta":
        return {"x": torch.empty(n, device="meta"), "y": torch.empty(n, device="meta")}
    gen = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn(n, device=device, generator=gen), "y": torch.randn(n, device=device, generator=gen)}


helion_add = HelionKernel(
    fn=add,
    inputs=add_inputs,
    args=lambda t, shape: (t["x"], t["y"]),
    reference=lambda t: t["x"] + t["y"],
    space={"block_sizes": [[256], [1024], [4096]], "num_warps": [2, 4, 8]},
    default={"block_sizes": [1024], "num_warps": 4},
)
