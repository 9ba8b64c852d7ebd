"""A campaign may narrow an adapter's knob space or change its baseline config without touching code."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from paretotune.kernels.base import Inputs, KernelAdapter, KernelPTX, Prepared
from paretotune.records import Shape
from paretotune.toolchain.arch import TargetArch


class OverriddenAdapter:
    """Wraps an adapter; ``space`` replaces the named knobs' values, ``default`` the named baseline values."""

    def __init__(self, inner: KernelAdapter, space: dict[str, list[Any]] | None,
                 default: dict[str, Any] | None) -> None:
        self.inner = inner
        self.name = inner.name
        self._space = {**inner.space(), **(space or {})}
        base_default = inner.default_config()
        # a narrowed knob whose default fell out of the space takes the first allowed value
        for key, values in (space or {}).items():
            if base_default.get(key) not in values:
                base_default[key] = values[0]
        self._default = {**base_default, **(default or {})}

    def space(self) -> dict[str, list[Any]]:
        return dict(self._space)

    def default_config(self) -> dict[str, Any]:
        return dict(self._default)

    def compile_ptx(self, config: Mapping[str, Any], shape: Shape, target: TargetArch) -> KernelPTX:
        return self.inner.compile_ptx(config, shape, target)

    def precompile(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, target: TargetArch) -> KernelPTX:
        return self.inner.precompile(config, shape, acf, target)

    def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
        return self.inner.make_inputs(shape, device, seed)

    def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
        return self.inner.prepare(config, shape, acf, inputs)

    def check_shape(self, shape: Shape, config: Mapping[str, Any]) -> None:
        self.inner.check_shape(shape, config)

    def check_space(self, space: Mapping[str, list[Any]]) -> None:
        self.inner.check_space(space)
