"""A program of the project's own with Triton kernels in a library, in a local module and in its own file.

Run with TRITON_INTERPRET=1 on a CPU. Prints one checksum per op (the capture must not change them) and exits
with the status given as its first argument.
"""
import sys

import torch
import triton
import triton.language as tl

import capkernels.ops as ops


@triton.jit
def square(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * x, mask=offs < n)


@triton.jit
def negate(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, -tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def main() -> int:
    torch.manual_seed(0)
    x, y = torch.randn(4096), torch.randn(4096)
    sums = []
    for _ in range(6):
        sums.append(float(ops.scale_add_op(x, y, 0.5).sum()))
    small = torch.randn(1000), torch.randn(1000)
    sums.append(float(ops.scale_add_op(*small, 2.0).sum()))
    for rows, cols in ((8, 100), (4, 200)):
        sums.append(float(ops.rms_norm_op(torch.randn(rows, cols), torch.rand(cols) + 0.5).sum()))
    z = torch.randn(3000)
    sums.append(float(ops.relu_op_(z).sum()))
    table = torch.randn(50, 24)
    sums.append(float(ops.gather_op(table, torch.randint(0, 50, (20,))).sum()))
    for _ in range(2):  # a new kernel object per call: still one kernel in the capture
        sums.append(float(ops.local_kernel_op(torch.randn(500)).sum()))
    out = torch.empty(2048)
    square[(8,)](x[:2048], out, 2048, BLOCK=256)
    sums.append(float(out.sum()))
    w = torch.randn(300)
    negate[(3,)](w, 300, BLOCK=128, enable_fp_fusion=False)  # a launch option no campaign can set: listed, skipped
    sums.append(float(w.sum()))
    print("checksums", " ".join(f"{s:.6f}" for s in sums))
    return int(sys.argv[1]) if len(sys.argv) > 1 else 0


if __name__ == "__main__":
    sys.exit(main())
