"""Helion kernels: a user-facing spec (:class:`HelionKernel`) and its adapter.

Helion turns one Python function plus a ``helion.Config`` into a Triton kernel (``_helion_<fn>``) and a host
function that launches it through ``_launcher=``. Both build paths reuse that host function:

- ahead of time (no GPU): bind ``meta`` tensors, generate the host function for the config and run it with a
  launcher that *compiles* each launch with :func:`paretotune.kernels.triton.compile_like_jit` instead of
  running it. The host code does the same shape arithmetic as on the GPU, so grid-independent PTX matches;
- on the GPU: bind real tensors, put the ACF into the config (``advanced_controls_file``) so Helion's codegen
  passes ``ptx_options='--apply-controls <acf>'`` to Triton, and launch the host function directly (no
  autotuning: we never call the ``Kernel`` object itself).

Why meta tensors: without a GPU, binding ``cuda`` tensors fails, while helion 1.5.1 and 1.5.0 with torch 2.13
(CPU) generate the same Triton code for ``meta`` tensors as for CPU tensors, without allocating or filling
inputs. CPU tensors are the fallback if the spec's inputs or a helion/torch pair cannot handle meta tensors.
Codegen that asks the device (TMA ``tensor_descriptor`` indexing, capability checks) sees no CUDA device
there, so bundled spaces use pointer indexing only, where the meta and the GPU bind generate the same code.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paretotune.kernels.base import Inputs, KernelPTX, Prepared, UnknownShapeKey, check_shape_keys
from paretotune.records import Shape
from paretotune.toolchain.arch import TargetArch

# SMs of the GPU each target stands for: persistent pid types size their grid with helion.runtime.get_num_sm,
# which needs a GPU. H100 SXM and H200 have 132 SMs, B200 148, A100 108.
NUM_SMS: dict[int, int] = {80: 108, 86: 84, 89: 128, 90: 132, 100: 148}


def import_helion() -> Any:
    """``import helion``, tolerating helion 1.5.1 on torch 2.11 (it imports a name torch 2.11 lacks).

    ``IntelGPUError`` is only used in an ``isinstance`` check inside helion's autotuner logger, so a stand-in
    exception class is enough.
    """
    from torch._inductor.runtime import triton_compat

    if not hasattr(triton_compat, "IntelGPUError"):
        triton_compat.IntelGPUError = type("IntelGPUError", (Exception,), {})  # type: ignore[attr-defined]
    import helion

    return helion


@dataclass(frozen=True)
class HelionKernel:
    """How to search and run a Helion kernel. Define one at module level; name it in the campaign.

    ``fn`` is a module-level ``@helion.kernel(static_shapes=True)`` kernel (or the undecorated function,
    which gets wrapped that way; Helion rejects closures). ``inputs(shape, device, seed)`` makes the named
    tensors (random, never zeros; with ``device="meta"`` only shapes matter). ``args(inputs, shape)`` gives
    the kernel's positional arguments. ``reference(inputs)`` is the expected value of what the kernel returns
    (optional: without it a candidate must match the default config's result on the same inputs).
    ``space`` holds ``helion.Config`` knobs (e.g. ``block_sizes: [[1], [2]]``, ``num_warps``,
    ``reduction_loops``); a candidate's config is passed as ``helion.Config(**config)``.
    """

    fn: Any
    inputs: Callable[[Mapping[str, Any], str, int], dict[str, Any]]
    args: Callable[[dict[str, Any], Mapping[str, Any]], tuple[Any, ...]]
    space: dict[str, list[Any]]
    default: dict[str, Any]
    reference: Callable[[dict[str, Any]], Any] | None = None  # None: compare with the baseline build's output
    atol: float = 1e-2
    rtol: float = 1e-2
    shapes: dict[str, dict[str, Any]] = field(default_factory=dict)  # named example shapes


@contextlib.contextmanager
def _num_sms(count: int) -> Iterator[None]:
    """Make ``helion.runtime.get_num_sm`` answer ``count`` (generated host code looks it up at call time)."""
    from helion import runtime

    original = runtime.get_num_sm
    runtime.get_num_sm = lambda *args, **kwargs: count  # type: ignore[assignment]
    try:
        yield
    finally:
        runtime.get_num_sm = original


def _acf_option(acf: Path | None) -> str:
    """The ``advanced_controls_file`` value: an absolute path without spaces (Triton splits on spaces)."""
    if acf is None:
        return ""
    path = str(Path(acf).resolve())
    if " " in path:
        raise ValueError(f"ACF path must not contain spaces (Triton splits ptx_options on them): {path!r}")
    return path


class HelionAdapter:
    """Adapter for a :class:`HelionKernel` spec."""

    def __init__(self, name: str, spec: HelionKernel) -> None:
        self.name = name
        self.spec = spec
        self._kernel: Any = None
        self._aot_device = "meta"  # becomes "cpu" if binding meta tensors fails (see _bind_meta)
        self.meta_bind_error: str | None = None
        self._aot_cache: dict[tuple[str, str], tuple[Any, ...]] = {}

    @property
    def kernel(self) -> Any:
        """The ``helion.Kernel`` (the undecorated function is wrapped with ``static_shapes=True`` once)."""
        if self._kernel is None:
            helion = import_helion()
            fn = self.spec.fn
            self._kernel = fn if isinstance(fn, helion.Kernel) else helion.kernel(fn, static_shapes=True)
        return self._kernel

    @property
    def kernel_name(self) -> str:
        """What Triton, ptxas and ncu call the device kernel: ``_helion_<python function name>``."""
        return f"_helion_{self.kernel.name}"

    def space(self) -> dict[str, list[Any]]:
        return dict(self.spec.space)

    def default_config(self) -> dict[str, Any]:
        return dict(self.spec.default)

    def helion_config(self, config: Mapping[str, Any], acf: Path | None = None) -> Any:
        """The ``helion.Config`` a candidate runs with: its knobs plus the ACF (``""``: none)."""
        helion = import_helion()
        return helion.Config(**{**config, "advanced_controls_file": _acf_option(acf)})

    def _inputs_and_args(self, shape: Shape, device: str, seed: int) -> tuple[dict[str, Any], tuple[Any, ...]]:
        inputs = self.spec.inputs(shape.params, device, seed)
        return inputs, tuple(self.spec.args(inputs, shape.params))

    def check_shape(self, shape: Shape, config: Mapping[str, Any]) -> None:
        def make(params: Mapping[str, Any]) -> None:
            self.spec.args(self.spec.inputs(params, "meta", 0), params)

        try:
            check_shape_keys(shape.params, make)
        except (KeyError, UnknownShapeKey):
            raise
        except Exception:  # noqa: BLE001, S110 - some factories need real tensors (_bind_meta falls back to CPU)
            pass

    def check_space(self, space: Mapping[str, list[Any]]) -> None:
        """Helion checks its own config values when it builds one; nothing is known to refuse earlier."""

    def _bind_meta(self, shape: Shape, num_sms: int) -> tuple[Any, tuple[Any, ...]]:
        """Bind meta tensors (CPU tensors if this helion/torch pair cannot trace meta ones) for ahead-of-time codegen.

        Helion's config spec asks for the SM count at bind time, so it is answered as the GPU would. The
        arguments are made once per shape: with the CPU fallback, filling a 4096 x 8192 input costs ~0.5 s,
        which every compile of every candidate would pay again.
        """
        with _num_sms(num_sms):
            if self._aot_device == "meta":
                try:
                    args = self._aot_args(shape, "meta")
                    return self.kernel.bind(args), args
                except Exception as exc:  # noqa: BLE001 - any failure with meta tensors: fall back to real CPU tensors
                    self._aot_device = "cpu"
                    self.meta_bind_error = f"{type(exc).__name__}: {exc}"[:1000]  # why, for tests and reports
            args = self._aot_args(shape, "cpu")
            return self.kernel.bind(args), args

    def _aot_args(self, shape: Shape, device: str) -> tuple[Any, ...]:
        key = (device, repr(sorted(shape.params.items())))
        if key not in self._aot_cache:
            self._aot_cache[key] = self._inputs_and_args(shape, device, 0)[1]
        return self._aot_cache[key]

    def triton_source(self, config: Mapping[str, Any], shape: Shape, acf: Path | None = None) -> str:
        """The generated Triton module (device kernel + host function) for ``config``; no GPU needed."""
        bound, _ = self._bind_meta(shape, NUM_SMS[90])
        return str(bound.to_triton_code(self.helion_config(config, acf)))

    def compile_ptx(self, config: Mapping[str, Any], shape: Shape, target: TargetArch) -> KernelPTX:
        return self.precompile(config, shape, None, target)

    def precompile(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, target: TargetArch) -> KernelPTX:
        """Compile as the GPU launch will (CPU pool), so the GPU worker finds the build in Triton's disk cache.

        The host function runs with a launcher that compiles for ``target`` instead of launching; with an
        ``acf`` the compile keeps the host code's ``ptx_options`` exactly as the launch passes them. Helion's
        codegen still runs in the GPU worker (tens of ms); Triton's compile and ptxas do not. Returns the PTX,
        which the ACF does not change (it acts in ptxas).
        """
        from paretotune.kernels.triton import compile_like_jit, ptx_of

        num_sms = NUM_SMS.get(target.capability, NUM_SMS[90])
        bound, args = self._bind_meta(shape, num_sms)
        host = bound.compile_config(self.helion_config(config, acf), allow_print=False)
        compiled: list[tuple[Any, int]] = []

        def compile_instead(jit_fn: Any, grid: tuple[int, ...], *kernel_args: Any, num_warps: int,
                            num_stages: int, **kwargs: Any) -> None:
            # Helion's own ``_``-prefixed launcher kwargs (distributed state, ...) never reach Triton.
            options = {k: v for k, v in kwargs.items() if not k.startswith("_")}
            if acf is None:
                options.pop("ptx_options", None)
            if not options.get("launch_cooperative_grid", True):
                options.pop("launch_cooperative_grid")
            options.update(num_warps=num_warps, num_stages=num_stages)
            compiled.append((compile_like_jit(jit_fn, list(kernel_args), options, target), num_warps))

        with _num_sms(num_sms):
            host(*args, _launcher=compile_instead)
        ours = [(ck, warps) for ck, warps in compiled if ck.name == self.kernel_name]
        if not ours:
            names = sorted({ck.name for ck, _ in compiled}) or ["no launch"]
            raise ValueError(f"kernel {self.name}: the host function launched {names}, not {self.kernel_name}")
        return ptx_of(*ours[0])

    def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
        return self.spec.inputs(shape.params, device, seed)

    def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
        """Bind ``inputs`` and build ``config``. Helion's host function allocates its output on every call (the
        caching allocator hands the same block back once the previous output is freed); only the inputs are
        shared between arms."""
        helion_config = self.helion_config(config, acf)
        args = tuple(self.spec.args(inputs, shape.params))
        bound = self.kernel.bind(args)
        host = bound.compile_config(helion_config, allow_print=False)
        bound.set_config(helion_config)  # a plain ``kernel(*args)`` call uses this config too, never autotunes
        reference = self.spec.reference

        def launch_once() -> Any:
            return host(*args)

        return Prepared(launch=launch_once, reference=None if reference is None else lambda: reference(inputs),
                        atol=self.spec.atol, rtol=self.spec.rtol, kernel_name=self.kernel_name, inputs=inputs)
