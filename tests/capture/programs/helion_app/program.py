"""A program with three Helion kernels (one returns its output, one writes into its argument, one is an AOT
kernel with a user key), run on the CPU under TRITON_INTERPRET=1. Prints a checksum per call."""
import sys

import torch

import helion
import helion.language as hl


@helion.kernel(config=helion.Config(block_sizes=[32, 32], num_warps=4), static_shapes=True)
def add_rows(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile_m, tile_n in hl.tile(out.size()):
        out[tile_m, tile_n] = x[tile_m, tile_n] + bias[tile_n]
    return out


@helion.kernel(config=helion.Config(block_sizes=[128], num_warps=2), static_shapes=True)
def scale_(x: torch.Tensor, factor: float) -> None:
    for tile in hl.tile(x.size()):
        x[tile] = x[tile] * factor


def _width(x: torch.Tensor, factor: float) -> tuple[int, torch.dtype]:
    return int(x.shape[-1]), x.dtype


@helion.aot_kernel(key=_width, config=helion.Config(block_sizes=[16], num_warps=2), static_shapes=True)
def keyed_scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile, :] = x[tile, :] * factor
    return out


def main() -> int:
    torch.manual_seed(0)
    sums = []
    for rows, cols in ((64, 96), (64, 96), (32, 64)):
        sums.append(float(add_rows(torch.randn(rows, cols), torch.randn(cols)).sum()))
    z = torch.randn(1000)
    scale_(z, 3.0)
    sums.append(float(z.sum()))
    sums.append(float(keyed_scale(torch.randn(16, 48), 2.0).sum()))
    print("checksums", " ".join(f"{s:.6f}" for s in sums))
    return 0


if __name__ == "__main__":
    sys.exit(main())
