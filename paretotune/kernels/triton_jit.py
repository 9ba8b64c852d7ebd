"""What Triton's JIT does, reproduced for ahead-of-time builds: its decorators, its config form, its compile.

:mod:`paretotune.kernels.triton` (the Triton adapter) and :mod:`paretotune.kernels.helion` (whose host
functions launch Triton kernels) both compile without a GPU through :func:`compile_like_jit`: the arguments
go through the JIT's own binder (:func:`paretotune.compat.triton.jit_specialization`), so pointer alignment
and ``== 1`` specializations match what ``JITFunction.run`` would build (without them register counts differ).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from paretotune.compat import triton as compat_triton
from paretotune.kernels.base import KernelPTX
from paretotune.toolchain.arch import TargetArch

LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pow2(v: Any, most: int) -> bool:
    return _int(v) and 1 <= v <= most and v & (v - 1) == 0


# launch option -> (accepts a value, what it must be)
LAUNCH_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "num_warps": (lambda v: _pow2(v, 32), "a power of two from 1 to 32"),
    "num_stages": (lambda v: _int(v) and 1 <= v <= 16, "an integer from 1 to 16"),
    "num_ctas": (lambda v: _pow2(v, 16), "a power of two from 1 to 16"),
    "maxnreg": (lambda v: _int(v) and 16 <= v <= 255, "an integer from 16 to 255, or null"),
}


def split_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(launch options, kernel parameters) of one flat config."""
    launch = {k: v for k, v in config.items() if k in LAUNCH_OPTIONS}
    return launch, {k: v for k, v in config.items() if k not in LAUNCH_OPTIONS}


@dataclass(frozen=True)
class _Unwrapped:
    """The JIT function under Triton's decorators, and what the decorators add."""

    jit: Any
    autotuner: Any = None
    heuristics: tuple[Any, ...] = ()  # outermost first


def unwrap(fn: Any) -> _Unwrapped:
    """Peel ``@triton.autotune`` and ``@triton.heuristics`` off a kernel; the JITFunction is what compiles."""
    compat_triton.checked()
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    autotuner, heuristics, inner = None, [], fn
    while not isinstance(inner, JITFunction):
        if isinstance(inner, Autotuner) and autotuner is None:
            autotuner = inner
        elif isinstance(inner, Heuristics):
            heuristics.append(inner)
        else:
            raise TypeError(f"{type(inner).__name__} is not a @triton.jit, @triton.autotune or @triton.heuristics "
                            "kernel")
        inner = inner.fn
    return _Unwrapped(inner, autotuner, tuple(heuristics))


def config_dict(config: Any) -> dict[str, Any]:
    """A ``triton.Config`` (or a dict) as one flat config: its kwargs plus the launch options it sets."""
    if isinstance(config, Mapping):
        return dict(config)
    out = dict(config.kwargs)
    out["num_warps"], out["num_stages"] = config.num_warps, config.num_stages
    if getattr(config, "num_ctas", 1) != 1:
        out["num_ctas"] = config.num_ctas
    if getattr(config, "maxnreg", None) is not None:
        out["maxnreg"] = config.maxnreg
    return out


def listed(config: Any, configs: Sequence[Any]) -> bool:
    """Whether ``config`` is among ``configs`` (``triton.Config``s or dicts, compared as flat configs)."""
    return any(config_dict(c) == config_dict(config) for c in configs)


def jit_defaults() -> dict[str, Any]:
    """The option kwargs ``JITFunction.run`` adds itself (they differ between Triton releases)."""
    from triton import knobs

    extra: dict[str, Any] = {"debug": bool(knobs.runtime.debug)}
    for name in ("instrumentation_mode", "fpsan_homomorphic_casts"):
        if hasattr(knobs.compilation, name):
            extra[name] = getattr(knobs.compilation, name)
    return extra


def compile_like_jit(jit_fn: Any, args: list[Any], options: dict[str, Any], target: TargetArch) -> Any:
    """``triton.compile`` for ``target`` with the JIT's specialization of ``args``; no GPU is touched."""
    compat_triton.checked()
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend

    gpu_target = GPUTarget("cuda", target.capability, target.warp_size)
    backend = make_backend(gpu_target)
    kwargs = {**jit_defaults(), "debug": bool(getattr(jit_fn, "debug", False)) or jit_defaults()["debug"], **options}
    sig, constexprs, attrs, opts = compat_triton.jit_specialization(jit_fn, backend, args, kwargs)
    return triton.compile(ASTSource(jit_fn, sig, constexprs, attrs), target=gpu_target, options=opts.__dict__)


def ptx_of(compiled: Any, num_warps: int) -> KernelPTX:
    meta = compiled.metadata
    return KernelPTX(ptx=compiled.asm["ptx"], kernel_name=compiled.name, num_warps=num_warps,
                     dynamic_shared=int(meta.shared), enable_fp_fusion=bool(getattr(meta, "enable_fp_fusion", True)))
