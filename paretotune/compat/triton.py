"""Triton's internals that paretotune relies on, each behind one function.

Checked against triton 3.9 (CPU), where ``tests/compat/test_triton_compat.py`` pins every assumption against the
installed Triton, and in use with 3.6 on the GPU machine; :func:`check` refuses a release outside
:data:`LOWEST`..:data:`BELOW`. Public forms are used wherever they exist elsewhere (``triton.compile``,
``ASTSource``, ``GPUTarget``, ``triton.knobs``, ``triton.testing``); what is here has none: the JIT's own argument
binder, the state of a ``JITFunction``, the source of the NVIDIA backend, the L2 flush buffer of ``do_bench``,
and the methods a capture wraps.
"""
from __future__ import annotations

import functools
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from paretotune.compat.patching import Undo, wrap_method
from paretotune.compat.release import installed, require

LOWEST, BELOW = (3, 6), (3, 10)  # as pyproject.toml asks: triton>=3.6,<3.10; 3.9 is the newest tested


def check() -> None:
    """Refuse (one line, :class:`~paretotune.errors.UserError`) a Triton outside the tested releases; reads the
    installed version without importing Triton (that must wait for ``export_for_triton``)."""
    require("triton", installed("triton", "pytorch-triton"), LOWEST, BELOW)


@functools.cache
def checked() -> None:
    """:func:`check`, once per process (it reads package metadata); every function here that imports Triton
    calls it first."""
    check()


def jit_specialization(jit_fn: Any, backend: Any, args: Sequence[Any], kwargs: dict[str, Any]
                       ) -> tuple[Any, Any, Any, Any]:
    """``(signature, constexprs, attrs, options)`` of a launch of ``jit_fn`` with ``args`` and option
    ``kwargs``, as ``JITFunction.run`` computes them: the JIT's own binder
    (``triton.runtime.jit.create_function_from_signature``) and ``JITFunction._pack_args``, so pointer alignment
    and ``== 1`` specializations match the launch's build."""
    checked()
    from triton.runtime.jit import create_function_from_signature

    binder = create_function_from_signature(jit_fn.signature, jit_fn.params, backend)
    bound, spec, opts = binder(*args, **kwargs)
    opts, sig, constexprs, attrs = jit_fn._pack_args(backend, kwargs, bound, spec, opts)
    return sig, constexprs, attrs, opts


# A JITFunction's attributes that cannot be pickled (a lock, caches, its module's globals) or are rebuilt on load.
JIT_TRANSIENT = ("_hash_lock", "device_caches", "__globals__", "kernel", "hash")


def jit_function_state(fn: Any) -> dict[str, Any]:
    """What a ``JITFunction`` is made of (its source text included), without what :func:`jit_function_from_state`
    rebuilds: a JIT function from a notebook cell, which has no source file to re-read, travels as this."""
    return {k: v for k, v in fn.__dict__.items() if k not in JIT_TRANSIENT}


def jit_function_from_state(cls: type, state: dict[str, Any]) -> Any:
    """A ``JITFunction`` from :func:`jit_function_state`'s dict: its lock, caches and globals made anew, and (triton
    >= 3.7, which looks kernels up by name) entered in ``triton.runtime.jit._triton_jit_function_registry``."""
    checked()
    from triton.runtime import jit

    fn = cls.__new__(cls)
    fn.__dict__.update(state)
    fn._hash_lock = threading.RLock()
    fn.hash = None
    fn.kernel = None
    fn.__globals__ = fn.fn.__globals__
    fn.device_caches = defaultdict(fn.create_binder)
    registry = getattr(jit, "_triton_jit_function_registry", None)
    if registry is not None:
        registry[f"{fn.module}:{fn.fn.__qualname__}"] = fn
    return fn


def nvidia_backend_source() -> str | None:
    """The text of Triton's NVIDIA backend (``triton/backends/nvidia/compiler.py``), read from the installed files
    without importing Triton (that must wait for ``export_for_triton``); None where Triton or the file is
    missing. The flags Triton passes to ptxas are only written there."""
    import importlib.util

    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        source = Path(root) / "backends" / "nvidia" / "compiler.py"
        if source.is_file():
            return source.read_text(errors="replace")
    return None


def l2_flush_buffer() -> Any:
    """The buffer ``triton.testing.do_bench`` zeroes between calls to flush the L2 cache
    (``triton.runtime.driver.active.get_empty_cache_for_benchmark()``). Needs CUDA."""
    checked()
    from triton import runtime

    return runtime.driver.active.get_empty_cache_for_benchmark()


# -- capture -------------------------------------------------------------------------------------------------------
# module -> (class, launch level) whose ``run`` a capture wraps: ``run`` is what ``kernel[grid](...)`` calls on a
# JIT function, an interpreted one (``TRITON_INTERPRET=1``), an ``@triton.autotune`` and an ``@triton.heuristics``.
RUN_CLASSES: dict[str, tuple[tuple[str, bool], ...]] = {
    "triton.runtime.jit": (("JITFunction", True),),
    "triton.runtime.interpreter": (("InterpretedFunction", True),),
    "triton.runtime.autotuner": (("Autotuner", False), ("Heuristics", False)),
}
KNOBS_MODULE = "triton.knobs"  # holds the launch hook chains (``knobs.runtime.launch_enter_hook``, ...)
Handler = Callable[[Any, Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]


def wrap_runs(module: ModuleType, handler: Callable[[bool], Handler]) -> list[Undo]:
    """Wrap ``run`` of each of :data:`RUN_CLASSES`' classes in ``module``: a call goes to
    ``handler(launch_level)(kernel, original, args, kwargs)``. Returns the undos."""
    return [wrap_method(getattr(module, name), "run", handler(launch_level))
            for name, launch_level in RUN_CLASSES[module.__name__]]


def add_launch_hooks(knobs: ModuleType, enter: Callable[..., Any], exit_: Callable[..., Any]) -> list[Undo]:
    """Add ``enter`` and ``exit_`` to Triton's launch hook chains (beside any the program added itself), where
    this Triton has such chains; returns the undos."""
    runtime = getattr(knobs, "runtime", None)
    undos: list[Undo] = []
    for name, hook in (("launch_enter_hook", enter), ("launch_exit_hook", exit_)):
        chain = getattr(runtime, name, None)
        if chain is not None and hasattr(chain, "add") and hasattr(chain, "remove"):
            chain.add(hook)
            undos.append(lambda chain=chain, hook=hook: chain.remove(hook))
    return undos
