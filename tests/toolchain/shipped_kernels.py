"""Two small Triton kernels for the shipped-ACF tests (compiled ahead of time for a target: no GPU needed)."""
import triton
import triton.language as tl


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):  # noqa: ANN001, ANN201, N803 - Triton's kernel signature
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    tl.store(out + i, tl.load(x + i, mask=mask) + tl.load(y + i, mask=mask), mask=mask)


@triton.jit
def scale(x, out, n, factor, BLOCK: tl.constexpr):  # noqa: ANN001, ANN201, N803
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    v = tl.load(x + i, mask=mask)
    tl.store(out + i, tl.exp(v) * factor + tl.sqrt(tl.abs(v)), mask=mask)
