"""docs/examples/vector_add.py behind an import that takes SLOW_IMPORT_S seconds (default 4), as a kernel module
with heavy dependencies does (a GPU build of torch, Helion: 15-19 s on an H200 host): what the campaign
process does while it waits is what benchmarks/bench_first_record.py measures."""
import os
import time

import torch
import triton
import triton.language as tl

from paretotune import TritonKernel

time.sleep(float(os.environ.get("SLOW_IMPORT_S", "4")))


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)


vector_add = TritonKernel(add_kernel, inputs=lambda s: dict(x=torch.randn(s["n"]), y=torch.randn(s["n"]),
                                                            out=torch.empty(s["n"])),
                          grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),),
                          space={"BLOCK": [256, 1024, 4096], "num_warps": [2, 4, 8]})
