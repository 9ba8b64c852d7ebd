"""Each of Triton's internals that :mod:`paretotune.compat.triton` relies on, pinned against the installed Triton."""
from __future__ import annotations

import importlib
import inspect
from typing import Any

import cloudpickle
import pytest

from paretotune.compat import triton as compat_triton
from paretotune.toolchain.arch import TARGETS

triton = pytest.importorskip("triton")


def test_the_jit_binder_and_pack_args_have_the_signatures_used() -> None:
    from triton.runtime.jit import JITFunction, create_function_from_signature

    assert list(inspect.signature(create_function_from_signature).parameters) == ["sig", "kparams", "backend"]
    assert list(inspect.signature(JITFunction._pack_args).parameters) == [
        "self", "backend", "kwargs", "bound_args", "specialization", "options"]


def test_a_specialization_is_the_jits_own() -> None:
    import torch
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend

    from paretotune.kernels.bundled.softmax import softmax_kernel
    from paretotune.kernels.triton_jit import jit_defaults, unwrap

    jit_fn = unwrap(softmax_kernel).jit
    backend = make_backend(GPUTarget("cuda", 90, TARGETS["sm_90"].warp_size))
    x = torch.empty(64, 128, device="meta")
    args = [x, torch.empty_like(x), 128, 128, 128, 128]  # out, in, the two row strides, n_cols, BLOCK
    sig, constexprs, attrs, opts = compat_triton.jit_specialization(
        jit_fn, backend, args, {**jit_defaults(), "num_warps": 4})
    assert len(sig) == len(jit_fn.params) and opts.num_warps == 4


def _jit_fn() -> Any:
    from paretotune.kernels.bundled.softmax import softmax_kernel
    from paretotune.kernels.triton_jit import unwrap

    return unwrap(softmax_kernel).jit


def test_a_jit_function_has_the_transient_attributes_and_rebuilds_from_its_state() -> None:
    fn = _jit_fn()
    for name in compat_triton.JIT_TRANSIENT:
        assert hasattr(fn, name), name
    assert callable(fn.create_binder)
    state = compat_triton.jit_function_state(fn)
    assert not set(state) & set(compat_triton.JIT_TRANSIENT)
    rebuilt = compat_triton.jit_function_from_state(type(fn), cloudpickle.loads(cloudpickle.dumps(state)))
    assert rebuilt.src == fn.src and rebuilt.__globals__ is rebuilt.fn.__globals__ and rebuilt.hash is None


def test_the_jit_function_registry_exists_from_triton_3_7() -> None:
    from triton.runtime import jit

    from paretotune.compat.release import installed, parse

    has = hasattr(jit, "_triton_jit_function_registry")
    assert has == (parse(installed("triton") or "0") >= (3, 7))


def test_the_nvidia_backend_source_is_where_compat_reads_it() -> None:
    source = compat_triton.nvidia_backend_source()
    assert source is not None and "ptxas" in source and "def make_cubin" in source


def test_the_l2_flush_buffer_comes_from_the_cuda_driver() -> None:
    from triton.backends.nvidia.driver import CudaDriver
    from triton.runtime.driver import DriverConfig

    assert callable(CudaDriver.get_empty_cache_for_benchmark) and isinstance(DriverConfig.active, property)


@pytest.mark.parametrize("module_name", sorted(compat_triton.RUN_CLASSES))
def test_each_class_a_capture_wraps_defines_run_and_gets_it_back(module_name: str) -> None:
    module = importlib.import_module(module_name)
    originals = {name: getattr(module, name).__dict__["run"] for name, _ in compat_triton.RUN_CLASSES[module_name]}
    levels: list[bool] = []
    undos = compat_triton.wrap_runs(module, lambda level: levels.append(level) or (lambda *a: None))
    assert levels == [level for _, level in compat_triton.RUN_CLASSES[module_name]]
    for undo in undos:
        undo()
    assert {name: getattr(module, name).__dict__["run"] for name in originals} == originals


def test_the_launch_hook_chains_take_and_give_back_a_hook() -> None:
    knobs = importlib.import_module(compat_triton.KNOBS_MODULE)

    def enter(*_: Any) -> None: ...

    def exit_(*_: Any) -> None: ...

    undos = compat_triton.add_launch_hooks(knobs, enter, exit_)
    assert len(undos) == 2
    for undo in undos:
        undo()
