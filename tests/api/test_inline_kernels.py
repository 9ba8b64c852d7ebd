"""Kernel objects given to the Python API travel to worker processes pickled by value
(:mod:`paretotune.kernels.inline`). The GPU machine runs triton 3.6, whose ``triton.runtime.jit`` has no
``_triton_jit_function_registry`` (triton 3.7+ has one); unpickling there failed with an AttributeError, so the
notebook path never reached the GPU (H200, 2026-12-01)."""
from __future__ import annotations

import linecache
import pickle

import pytest

from paretotune.kernels import inline
from paretotune.kernels.triton_jit import compile_like_jit
from paretotune.toolchain.arch import TARGETS

CELL = '''
import triton
import triton.language as tl

@triton.jit
def double_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)
'''


def _cell_kernel() -> object:
    """A @triton.jit kernel defined the way a notebook cell defines it: its source only in linecache."""
    name = "<ipython-input-7-inline>"
    linecache.cache[name] = (len(CELL), None, CELL.splitlines(True), name)
    namespace: dict[str, object] = {"__name__": "__main__"}
    exec(compile(CELL, name, "exec"), namespace)
    return namespace["double_kernel"]


@pytest.mark.parametrize("registry", ["triton 3.7+ (registry)", "triton 3.6 (no registry)"])
def test_a_pickled_jit_kernel_rebuilds_with_and_without_tritons_registry(registry: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from triton.runtime import jit

    blob = inline.dumps(_cell_kernel())
    if "no registry" in registry:
        monkeypatch.delattr(jit, "_triton_jit_function_registry", raising=False)
    rebuilt = pickle.loads(blob)
    monkeypatch.undo()  # compiling may use the registry where this triton has one
    assert isinstance(rebuilt, jit.JITFunction) and "tl.store" in rebuilt.src
    x = torch.empty(4096, device="meta")
    compiled = compile_like_jit(rebuilt, [x, torch.empty_like(x), 4096, 1024], {"num_warps": 4},
                                TARGETS["sm_90"])
    assert ".visible .entry double_kernel" in compiled.asm["ptx"]
