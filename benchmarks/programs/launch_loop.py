"""The capture's worst case: many short launches of the tests' own Triton kernels (a scale-add, an autotuned
row RMS norm, an in-place ReLU with a heuristic), timed by the program itself in blocks of 50 iterations.

Prints one JSON line: ``{"step_ms": [per-iteration ms of each block], "median_ms": ..., "launches": N}``. Needs
``tests/capture/programs/lib`` on PYTHONPATH. On a CPU, run it under ``TRITON_INTERPRET=1`` with small sizes.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import torch

import capkernels.ops as ops


BLOCK = 50  # iterations timed together


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--n", type=int, default=1 << 20, help="elements of the scale-add and the ReLU")
    parser.add_argument("--rows", type=int, default=4096, help="rows of the RMS norm (256 columns)")
    return parser


def make_step(args: argparse.Namespace) -> Callable[[], None]:
    """One iteration: three kernel calls on tensors made once (``bench_capture_ablation.py`` imports it)."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    x, y = torch.randn(args.n, device=device), torch.randn(args.n, device=device)
    m, w = torch.randn(args.rows, 256, device=device), torch.rand(256, device=device) + 0.5

    def step() -> None:
        ops.scale_add_op(x, y, 0.5)
        ops.rms_norm_op(m, w)
        ops.relu_op_(y)

    return step


def main() -> None:
    args = parser().parse_args()
    cuda = torch.cuda.is_available()
    step, times = make_step(args), []
    for _ in range(args.warmup):
        step()
    for _ in range(max(1, args.iters // BLOCK)):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(BLOCK):
            step()
        if cuda:
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3 / BLOCK)
    launches = 3 * (args.warmup + BLOCK * len(times))
    print(json.dumps({"step_ms": times, "median_ms": statistics.median(times), "launches": launches}))


if __name__ == "__main__":
    main()
