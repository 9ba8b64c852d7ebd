"""A failed build's one-line error says why, not only where: Triton's CompilationError puts the kernel position
on its first line and the reason last (Helion configs whose tile is over Triton's element limit read
"CompilationError: at 10:24: at compiler.py:80" before)."""
from __future__ import annotations

import pytest


def test_a_triton_compilation_error_names_its_reason() -> None:
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from paretotune.build.static_job import _describe

    @triton.jit
    def double(x_ptr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202, N803 - Triton's
        # own style: an annotation other than constexpr is read as a global the kernel may not use
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)

    source = ASTSource(fn=double, signature={"x_ptr": "*fp32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 2**21})
    with pytest.raises(Exception) as caught:  # noqa: PT011 - Triton's own class, checked by name below
        triton.compile(source, target=GPUTarget("cuda", 90, 32))
    assert type(caught.value).__name__ == "CompilationError"
    line = _describe(caught.value, " at compiler.py:80")
    assert line.startswith("CompilationError at ") and "\n" not in line
    assert line.endswith("numel (2097152) exceeds triton maximum tensor numel (1048576)")
