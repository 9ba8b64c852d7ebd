"""Helion's internals that paretotune relies on, each behind one function.

Checked against helion 1.5.1 (CPU, torch 2.13), where ``tests/compat/test_helion_compat.py`` pins every
assumption against the installed Helion, and in use with 1.5.0 on the GPU machine (torch 2.11); :func:`check`
refuses any other minor release. Where Helion has a public form it is used instead: ``BenchmarkProvider`` and
``BenchmarkResult``, the search classes, ``seed_training_data``, ``aot_cache.find_heuristic_file``. (1.5.1 has a
public ``ConfigSpec.normalized_config``, but it has no fix-invalid mode and may be missing from 1.5.0: the
private keyword stays behind :func:`normalize`.)
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any

from paretotune.compat.patching import Undo, swapped, wrap_method
from paretotune.compat.release import installed, require

LOWEST, BELOW = (1, 5, 0), (1, 6)  # the tested releases: >=1.5.0,<1.6 (as pyproject.toml pins them)
REGISTERS_PER_SM = 65536  # 32-bit registers per SM, and at most per block, on every target of toolchain/arch.py


def check() -> None:
    """Refuse (one line, :class:`~paretotune.errors.UserError`) a Helion outside :data:`LOWEST`..:data:`BELOW`."""
    require("helion", installed("helion"), LOWEST, BELOW)


@functools.cache
def import_helion() -> ModuleType:
    """``import helion`` after :func:`check`, tolerating helion 1.5.1 on torch 2.11: helion imports
    ``IntelGPUError`` from ``torch._inductor.runtime.triton_compat``, which torch 2.11 lacks; helion only uses it
    in an ``isinstance`` check inside its autotuner logger, so a stand-in exception class is enough. Every
    function here calls it first (once per process: the module is cached)."""
    check()
    from torch._inductor.runtime import triton_compat

    if not hasattr(triton_compat, "IntelGPUError"):
        triton_compat.IntelGPUError = type("IntelGPUError", (Exception,), {})  # type: ignore[attr-defined]
    import helion

    _nvidia_only()
    return helion


def _nvidia_only() -> None:
    """paretotune builds for NVIDIA targets only (ptxas, its ACFs). Helion's "is this an AMD (HIP) GPU?"
    (``helion._compat._is_hip``, cached, asked when a kernel is defined and while it compiles) asks CUDA for the
    current device, which initializes CUDA the first time: every process that defines a Helion kernel on a GPU
    host, the campaign process and each build worker included, initialized CUDA it never uses. Answered False
    without asking (Helion's own tests patch ``_is_hip`` the same way).

    Its "does this GPU take ``maxnreg``?" (``_supports_maxnreg``, cached) asks whether CUDA is available: every
    NVIDIA target takes it, but on a machine without a GPU (a static campaign on a CPU) Helion answered no and
    left ``maxnreg`` out of its ConfigSpec, its configs and its launch, so such a campaign never searched the knob
    that caps registers, and built what a GPU host would build otherwise. Answered True as the target would, with
    the register file Helion caps ``maxnreg`` by (``_regs_per_block``, which asks the current CUDA device):
    :data:`REGISTERS_PER_SM`."""
    from helion import _compat
    from helion.autotuner import config_spec

    if callable(getattr(_compat, "_is_hip", None)):
        _compat._is_hip = lambda: False  # type: ignore[attr-defined]
    if callable(getattr(_compat, "_supports_maxnreg", None)):
        _compat._supports_maxnreg = lambda: True  # type: ignore[attr-defined]
    for module in (_compat, config_spec):  # config_spec imported it by name
        if callable(getattr(module, "_regs_per_block", None)):
            module._regs_per_block = lambda: REGISTERS_PER_SM  # type: ignore[attr-defined]


# -- the device, as the campaign's target would answer -----------------------------------------------------------
@contextlib.contextmanager
def tensor_descriptors(available: bool) -> Iterator[None]:
    """Helion's 'are TMA tensor descriptors available?' (``helion._compat._supports_tensor_descriptor``, which
    asks CUDA) answers ``available`` inside the block."""
    import_helion()
    from helion import _compat

    with swapped(_compat, "_supports_tensor_descriptor", lambda: available):
        yield


@contextlib.contextmanager
def num_sms(count: int) -> Iterator[None]:
    """Helion's two SM counts answer ``count`` inside the block: ``helion.runtime.get_num_sm`` (which needs a GPU;
    generated host code looks it up at call time) and ``_compat.num_compute_units``, which answers 128 without a
    GPU. The config spec floors its grid block sizes by the latter when a kernel is bound
    (``ConfigSpec.raise_grid_block_minimums``): a CPU campaign for sm_90 (132 SMs) searched a space with other
    floors than a GPU host's, e.g. block sizes from 16 rather than 8 over 131,072 rows."""
    import_helion()
    from helion import _compat, runtime
    from helion.autotuner import config_spec

    answer = lambda *args, **kwargs: count  # noqa: E731 - one stand-in for every signature
    with contextlib.ExitStack() as stack:
        stack.enter_context(swapped(runtime, "get_num_sm", answer))
        for module in (_compat, config_spec):  # config_spec imported it by name
            if callable(getattr(module, "num_compute_units", None)):
                stack.enter_context(swapped(module, "num_compute_units", answer))
        yield


@contextlib.contextmanager
def tma_decision_as(capability: int) -> Iterator[None]:
    """Helion's codegen decides whether a config's accesses go through the TMA async proxy
    (``helion._compiler.device_function._selects_tma_access``, which reads the compile environment's device)
    as for a CUDA device of ``capability`` when it runs on meta or CPU tensors. A Helion without that
    decision is left as it is."""
    import_helion()
    try:
        from helion._compiler import device_function
    except ImportError:
        yield
        return
    original = getattr(device_function, "_selects_tma_access", None)
    env_class = getattr(device_function, "CompileEnvironment", None)
    if original is None or env_class is None:
        yield
        return
    import torch

    def as_on_target(config: Any) -> bool:
        env = env_class.current()
        if env.device.type == "cuda":
            return bool(original(config))
        spec = env.config_spec
        saved = env.device, spec.target_device_capability
        env.device, spec.target_device_capability = torch.device("cuda", 0), divmod(capability, 10)
        try:
            return bool(original(config))
        finally:
            env.device, spec.target_device_capability = saved

    with swapped(device_function, "_selects_tma_access", as_on_target):
        yield


# -- AOT heuristics ------------------------------------------------------------------------------------------------
def hardware_info(capability: int) -> Any:
    """Helion's ``helion._hardware.HardwareInfo`` for a CUDA device of ``capability`` (``90`` -> ``sm90``)."""
    import_helion()
    from helion._hardware import HardwareInfo

    return HardwareInfo(device_kind="cuda", hardware_name=f"sm_{capability} target", runtime_version="target",
                        compute_capability=f"sm{capability}")


def compatible_compute_ids(capability: int) -> list[str]:
    """The compute ids Helion falls back through for ``capability``, newest first (``sm90``, ``sm89``, ...)."""
    return list(hardware_info(capability).get_compatible_compute_ids())


@contextlib.contextmanager
def heuristic_lookup_as(capability: int) -> Iterator[None]:
    """Helion's heuristic discovery (``helion.autotuner.aot_cache``) sees a CUDA device of ``capability``:
    ``aot_cache.get_hardware_info`` is swapped, and Helion's per-file lookup cache is cleared on entry and exit
    (it caches a lookup whatever the device was)."""
    import_helion()
    from helion.autotuner import aot_cache

    info = hardware_info(capability)
    with swapped(aot_cache, "get_hardware_info", lambda *args, **kwargs: info):
        aot_cache.clear_heuristic_cache()
        try:
            yield
        finally:
            aot_cache.clear_heuristic_cache()


def aot_user_key(kernel: Any) -> Callable[..., Any] | None:
    """The ``key=`` function of an ``@helion.aot_kernel(key=...)`` (stored as ``kernel._aot_user_key``), else
    None."""
    return getattr(kernel, "_aot_user_key", None)


def has_aot_user_key_slot(kernel: Any) -> bool:
    """Whether ``kernel`` carries the attribute ``@helion.aot_kernel`` sets (even as None)."""
    return hasattr(kernel, "_aot_user_key")


def flatten_key_value(value: Any) -> list[Any]:
    """A user key's value flattened as Helion flattens it before asking the heuristic
    (``helion.autotuner.aot_kernel._flatten_key_value``: nested sequences, dtypes as element sizes)."""
    import_helion()
    from helion.autotuner.aot_kernel import _flatten_key_value

    return list(_flatten_key_value(value))


# -- configs and bound kernels -------------------------------------------------------------------------------------
def normalize(config_spec: Any, config: dict[str, Any], *, fix_invalid: bool) -> None:
    """``ConfigSpec.normalize`` in place: fill missing keys; ``fix_invalid`` rewrites invalid values instead of
    raising (Helion's keyword ``_fix_invalid``)."""
    config_spec.normalize(config, _fix_invalid=fix_invalid)


def default_config(config_spec: Any) -> dict[str, Any]:
    """``ConfigSpec.default_config()`` as a plain dict: the config Helion's own searches always measure."""
    return dict(config_spec.default_config().config)


def conform_list_lengths(config_spec: Any, config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with each list knob that Helion's search encodes at a fixed length (a ``ListOf`` of the
    ConfigSpec: ``indexing``, ``atomic_indexing``, ...) cut, or padded with its default, to that length. A heuristic
    written for another binding of the kernel can carry one more memory op's slot than this binding has; Helion
    compiles it (the extra slot unused), but its search's encoding asserts on the length."""
    import_helion()
    from helion.autotuner.config_fragment import ListOf

    out = dict(config)
    for key, value in config.items():
        fragment = getattr(config_spec, key, None)
        if isinstance(fragment, ListOf) and isinstance(value, list) and len(value) != fragment.length:
            out[key] = [*value[:fragment.length], *fragment.default()[len(value):]]
    return out


def bound_config(bound: Any) -> Any:
    """The config a bound kernel runs a plain call with (``BoundKernel._config``: its autotuner's pick, the AOT
    heuristic's, the decorator's), else None."""
    return getattr(bound, "_config", None)


def run_host(host: Callable[..., Any], args: Sequence[Any], launcher: Callable[..., Any]) -> Any:
    """Run a Helion host function (``BoundKernel.compile_config``'s result) with ``launcher`` in place of its
    Triton launch (the generated code's ``_launcher=`` keyword); the launcher receives
    ``(jit_fn, grid, *kernel_args, num_warps=, num_stages=, **options)``."""
    return host(*args, _launcher=launcher)


def triton_options(launch_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The keywords of a host function's launch that are Triton's: Helion adds its own with a ``_`` prefix
    (distributed state, ...), which never reach Triton."""
    return {k: v for k, v in launch_kwargs.items() if not k.startswith("_")}


# -- Helion's searches on paretotune's measurements -----------------------------------------------------------------
def external_kernel(config_spec: Any, **settings: Any) -> Any:
    """A tunable kernel for Helion's search algorithms over any ``ConfigSpec``, compiling nothing
    (``helion.autotuner.external._ExternalKernelAdapter``, CPU device); ``settings`` are Helion ``autotune_*``
    settings. Helion's public ``helion.autotuner.autotune`` builds this adapter too, but only from a dict of
    tunables and runs the whole search itself."""
    import_helion()
    import torch
    from helion.autotuner.external import _ExternalKernelAdapter

    return _ExternalKernelAdapter(config_spec, lambda _config: None, (), device=torch.device("cpu"), **settings)


def use_benchmark_provider(search: Any, factory: Callable[..., Any]) -> None:
    """Make ``search`` build its benchmark provider with ``factory(**context)`` (``BaseSearch`` takes the class as
    ``benchmark_provider_cls``, but its subclasses do not pass it on: the attribute it keeps,
    ``_benchmark_provider_cls``, is set instead)."""
    search._benchmark_provider_cls = factory


@functools.cache
def without_gpu_retiming(cls: type) -> type:
    """A subclass of the search class ``cls`` whose own GPU re-timing is left out: ``rebenchmark`` does nothing
    and ``final_rebenchmark_best`` keeps the best as measured (paretotune's measurement is the one it ranks by)."""
    def rebenchmark(self: Any, members: Any, **_kw: Any) -> None:
        return None

    def final_rebenchmark_best(self: Any, best: Any) -> Any:
        return best

    return type(f"Bridged{cls.__name__}", (cls,), {"rebenchmark": rebenchmark,
                                                   "final_rebenchmark_best": final_rebenchmark_best})


# -- capture ---------------------------------------------------------------------------------------------------------
KERNEL_MODULE = "helion.runtime.kernel"  # defines ``Kernel``, whose ``__call__`` a capture wraps


def wrap_kernel_call(module: ModuleType, handler: Callable[[Any, Callable[..., Any], tuple[Any, ...],
                                                            dict[str, Any]], Any]) -> Undo:
    """``helion.Kernel.__call__`` (``module`` is :data:`KERNEL_MODULE`) calls ``handler(kernel, original, args,
    kwargs)`` until the returned function undoes it."""
    return wrap_method(module.Kernel, "__call__", handler)
