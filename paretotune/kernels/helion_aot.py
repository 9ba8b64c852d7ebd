"""Helion ahead of time, without a GPU: bind meta tensors, run the host function with a compiling launcher.

Helion generates a host function that launches its Triton kernel through ``_launcher=``. Run with a launcher
that *compiles* each launch (:func:`paretotune.kernels.triton_jit.compile_like_jit`) instead of running it,
the host code does the same shape arithmetic as on the GPU, so grid-independent PTX matches the GPU build.

Why meta tensors: without a GPU, binding ``cuda`` tensors fails, while helion 1.5.1 and 1.5.0 with torch 2.13
(CPU) generate the same Triton code for ``meta`` tensors as for CPU tensors, without allocating or filling
inputs. CPU tensors are the fallback if the spec's inputs or a helion/torch pair cannot handle meta tensors.
Codegen that asks the device (TMA ``tensor_descriptor`` indexing, capability checks) sees no CUDA device
there, so bundled spaces use pointer indexing only, where the meta and the GPU bind generate the same code.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from paretotune.compat.helion import num_sms, run_host, tma_decision_as, triton_options
from paretotune.kernels.base import KernelPTX
from paretotune.kernels.triton_jit import compile_like_jit, ptx_of
from paretotune.records import Shape
from paretotune.toolchain.arch import TargetArch

# SMs of the GPU each target stands for: persistent pid types size their grid with helion.runtime.get_num_sm,
# which needs a GPU. sm_90's parts (H100 SXM and its successor) have 132 SMs, B200 148, A100 108.
NUM_SMS: dict[int, int] = {80: 108, 86: 84, 89: 128, 90: 132, 100: 148}


def sms_of(target: TargetArch) -> int:
    """The SM count a target stands for (sm_90's for an unlisted one)."""
    return NUM_SMS.get(target.capability, NUM_SMS[90])


@contextlib.contextmanager
def target_codegen(capability: int) -> Iterator[None]:
    """Make Helion's codegen from meta (or CPU) tensors decide as it does for a CUDA device of ``capability``
    where it asks the device: whether a config's accesses go through the TMA async proxy, which adds fences
    (``async_store_drain``, ``async_load_fence``) to kernels with a cross-thread sync. Without this the pool's
    build of dynamic_per_token_scaled_fp8_quant, rms_norm_dynamic_per_token_quant and rms_norm_per_block_quant
    lacked the fences, so the GPU worker rebuilt every candidate (``benchmarks/check_build_keys.py`` finds
    such rebuilds). A Helion without that decision is left as it is."""
    with tma_decision_as(capability):
        yield


class AotBinder:
    """One kernel's ahead-of-time binds: arguments made once per shape and device, meta first, CPU after a
    meta bind fails (``device`` says which; ``meta_bind_error`` why, for tests and reports)."""

    def __init__(self, kernel: Callable[[], Any], make_args: Callable[[Shape, str], tuple[Any, ...]]) -> None:
        self._kernel = kernel  # a callable: the helion.Kernel is made (and helion imported) on first use
        self._make_args = make_args
        self.device = "meta"
        self.meta_bind_error: str | None = None
        self._cache: dict[tuple[str, str], tuple[Any, ...]] = {}

    def args(self, shape: Shape, device: str) -> tuple[Any, ...]:
        """The kernel's arguments for ``shape`` on ``device`` (made once: filling a large CPU input costs ~0.5 s)."""
        key = (device, repr(sorted(shape.params.items())))
        if key not in self._cache:
            self._cache[key] = self._make_args(shape, device)
        return self._cache[key]

    def bind(self, shape: Shape, sms: int) -> tuple[Any, tuple[Any, ...]]:
        """(bound kernel, its arguments) for ahead-of-time codegen. Helion's config spec asks for the SM count at
        bind time, so it is answered as the GPU would."""
        with num_sms(sms):
            if self.device == "meta":
                try:
                    args = self.args(shape, "meta")
                    return self._kernel().bind(args), args
                except Exception as exc:  # noqa: BLE001 - any failure with meta tensors: fall back to real CPU tensors
                    self.device = "cpu"
                    self.meta_bind_error = f"{type(exc).__name__}: {exc}"[:1000]
            args = self.args(shape, "cpu")
            return self._kernel().bind(args), args

    def precompile(self, shape: Shape, helion_config: Any, acf: Path | None, target: TargetArch,
                   kernel_name: str, label: str) -> KernelPTX:
        """Run the host function for ``helion_config`` with a launcher that compiles for ``target``; the PTX of
        ``kernel_name``'s launch. With an ``acf`` the compile keeps the host code's ``ptx_options`` exactly as
        the launch passes them, so the GPU worker finds the build in Triton's disk cache."""
        sms = sms_of(target)
        bound, args = self.bind(shape, sms)
        with target_codegen(target.capability):
            host = bound.compile_config(helion_config, allow_print=False)
        compiled: list[tuple[Any, int]] = []

        def compile_instead(jit_fn: Any, grid: tuple[int, ...], *kernel_args: Any, num_warps: int,
                            num_stages: int, **kwargs: Any) -> None:
            options = triton_options(kwargs)
            if acf is None:
                options.pop("ptx_options", None)
            if not options.get("launch_cooperative_grid", True):
                options.pop("launch_cooperative_grid")
            options.update(num_warps=num_warps, num_stages=num_stages)
            compiled.append((compile_like_jit(jit_fn, list(kernel_args), options, target), num_warps))

        with num_sms(sms):
            run_host(host, args, compile_instead)
        ours = [(ck, warps) for ck, warps in compiled if ck.name == kernel_name]
        if not ours:
            names = sorted({ck.name for ck, _ in compiled}) or ["no launch"]
            raise ValueError(f"kernel {label}: the host function launched {names}, not {kernel_name}")
        return ptx_of(*ours[0])
