"""Triton kernels: a user-facing spec (:class:`TritonKernel`) and its adapter.

Ahead-of-time compiles reproduce what ``JITFunction.run`` would build: the arguments go through the JIT's own
binder, so pointer alignment and ``== 1`` specializations match (without them register counts differ).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paretotune.kernels.base import Inputs, KernelPTX, Prepared, check_shape_keys
from paretotune.records import Shape
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


@dataclass(frozen=True)
class TritonKernel:
    """How to search and run a ``@triton.jit`` kernel. Define one at module level; name it in the campaign.

    ``inputs(shape, device, seed)`` makes the named input/output tensors (random, never zeros; with
    ``device="meta"`` only shapes matter). ``args(inputs, shape, config)`` maps every kernel parameter name
    to its value (constexpr knobs from ``config`` included). ``grid(shape, config)`` is the launch grid.
    ``reference(inputs)`` is the expected output (optional: without it a candidate must match the default
    config's output on the same inputs, within ``atol``/``rtol``); ``output`` names the input entry the kernel
    writes.
    Config keys in :data:`LAUNCH_OPTIONS` become launch options, the rest must be kernel parameters.
    """

    fn: Any
    inputs: Callable[[Mapping[str, Any], str, int], dict[str, Any]]
    args: Callable[[dict[str, Any], Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]
    grid: Callable[[Mapping[str, Any], Mapping[str, Any]], tuple[int, ...]]
    output: str
    space: dict[str, list[Any]]
    default: dict[str, Any]
    reference: Callable[[dict[str, Any]], Any] | None = None  # None: compare with the baseline build's output
    atol: float = 1e-2
    rtol: float = 1e-2
    shapes: dict[str, dict[str, Any]] = field(default_factory=dict)  # named example shapes


def _split_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    launch = {k: v for k, v in config.items() if k in LAUNCH_OPTIONS}
    return launch, {k: v for k, v in config.items() if k not in LAUNCH_OPTIONS}


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
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    gpu_target = GPUTarget("cuda", target.capability, target.warp_size)
    backend = make_backend(gpu_target)
    binder = create_function_from_signature(jit_fn.signature, jit_fn.params, backend)
    kwargs = {**jit_defaults(), "debug": bool(getattr(jit_fn, "debug", False)) or jit_defaults()["debug"], **options}
    bound, spec, opts = binder(*args, **kwargs)
    opts, sig, constexprs, attrs = jit_fn._pack_args(backend, kwargs, bound, spec, opts)
    return triton.compile(ASTSource(jit_fn, sig, constexprs, attrs), target=gpu_target, options=opts.__dict__)


def ptx_of(compiled: Any, num_warps: int) -> KernelPTX:
    meta = compiled.metadata
    return KernelPTX(ptx=compiled.asm["ptx"], kernel_name=compiled.name, num_warps=num_warps,
                     dynamic_shared=int(meta.shared), enable_fp_fusion=bool(getattr(meta, "enable_fp_fusion", True)))


class TritonAdapter:
    """Adapter for a :class:`TritonKernel` spec."""

    def __init__(self, name: str, spec: TritonKernel) -> None:
        self.name = name
        self.spec = spec

    def space(self) -> dict[str, list[Any]]:
        return dict(self.spec.space)

    def default_config(self, shape: Shape) -> dict[str, Any]:
        """The spec's default: one config for every shape."""
        return dict(self.spec.default)

    def constraint(self) -> None:
        return None

    def _ordered_args(self, inputs: dict[str, Any], shape: Shape, config: Mapping[str, Any]) -> list[Any]:
        named = self.spec.args(inputs, shape.params, config)
        names = [p.name for p in self.spec.fn.params]
        missing = [n for n in names if n not in named]
        if missing:
            raise ValueError(f"kernel {self.name}: args() gave no value for parameter(s) {missing}")
        return [named[n] for n in names]

    def compile_ptx(self, config: Mapping[str, Any], shape: Shape, target: TargetArch) -> KernelPTX:
        return self.precompile(config, shape, None, target)

    def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
        return self.spec.inputs(shape.params, device, seed)

    def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
        launch, _ = _split_config(config)
        if acf is not None:
            launch["ptx_options"] = f"--apply-controls {acf}"
        args = self._ordered_args(inputs, shape, config)
        grid = self.spec.grid(shape.params, config)
        fn = self.spec.fn
        out_name = self.spec.output
        reference = self.spec.reference

        def launch_once() -> Any:
            fn[grid](*args, **launch)
            return inputs[out_name]

        return Prepared(launch=launch_once, reference=None if reference is None else lambda: reference(inputs),
                        atol=self.spec.atol, rtol=self.spec.rtol, kernel_name=fn.__name__, inputs=inputs,
                        output=inputs[out_name])

    def check_shape(self, shape: Shape, config: Mapping[str, Any]) -> None:
        def make(params: Mapping[str, Any]) -> None:
            inputs = self.spec.inputs(params, "meta", 0)
            self.spec.args(inputs, params, config)
            self.spec.grid(params, config)

        check_shape_keys(shape.params, make)

    def check_space(self, space: Mapping[str, list[Any]]) -> None:
        for knob, values in space.items():
            rule = LAUNCH_RULES.get(knob)
            for v in values:
                if rule is not None and not (v is None and knob == "maxnreg") and not rule[0](v):
                    raise ValueError(f"{knob}: {v!r} is not a valid value ({rule[1]})")

    def precompile(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, target: TargetArch) -> KernelPTX:
        """Compile with the ACF exactly as the launch will, so the GPU worker finds it in Triton's disk cache.

        Returns the PTX too: an ACF acts only in ptxas, so it is the PTX :meth:`compile_ptx` would give.
        """
        launch, _ = _split_config(config)
        if acf is not None:
            launch["ptx_options"] = f"--apply-controls {acf}"
        inputs = self.spec.inputs(shape.params, "meta", 0)
        compiled = compile_like_jit(self.spec.fn, self._ordered_args(inputs, shape, config), launch, target)
        return ptx_of(compiled, int(launch.get("num_warps", 4)))
