import torch, triton, triton.language as tl
from paretotune import TritonKernel

@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)

vector_add = TritonKernel(add_kernel, inputs=lambda s: dict(x=torch.randn(s["n"]), y=torch.randn(s["n"]), out=torch.empty(s["n"])),
                          grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),), space={"BLOCK": [256, 1024, 4096], "num_warps": [2, 4, 8]})
