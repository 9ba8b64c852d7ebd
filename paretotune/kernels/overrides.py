"""A campaign may narrow an adapter's knob space or change its baseline config without touching code."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from paretotune.kernels.base import Inputs, KernelAdapter, KernelPTX, Prepared
from paretotune.records import Shape
from paretotune.toolchain.arch import TargetArch


def _in_list(config: Mapping[str, Any], listed: list[Any]) -> bool:
    """A flat config contains one of the listed configs, or is a per-shape default (resolved later)."""
    from paretotune.kernels.base import PER_SHAPE_DEFAULT

    if config.get(PER_SHAPE_DEFAULT[0]) == PER_SHAPE_DEFAULT[1]:
        return True
    return any(all(config.get(k) == v for k, v in c.items()) for c in listed)


class OverriddenAdapter:
    """Wraps an adapter; ``space`` replaces the named knobs' values, ``default`` the named baseline values."""

    def __init__(self, inner: KernelAdapter, space: dict[str, list[Any]] | None,
                 default: dict[str, Any] | None) -> None:
        from paretotune.search.space import CONFIG_LIST_KNOB

        self.inner = inner
        self.name = inner.name
        own = inner.space()
        listed = own.get(CONFIG_LIST_KNOB)
        inside = {k: v for k, v in (space or {}).items() if k not in own and listed}
        if inside:  # narrowing a key of an explicit config list keeps the listed configs whose value is allowed
            own[CONFIG_LIST_KNOB] = [c for c in listed if all(c.get(k) in v for k, v in inside.items())]
            space = {k: v for k, v in (space or {}).items() if k not in inside}
        self._space = {**own, **(space or {})}
        base_default = inner.default_config()
        # a narrowed knob whose default fell out of the space takes the first allowed value
        for key, values in (space or {}).items():
            if base_default.get(key) not in values:
                base_default[key] = values[0]
        if inside and not _in_list(base_default, own[CONFIG_LIST_KNOB]):
            base_default = {**dict(own[CONFIG_LIST_KNOB][0]), **{k: v for k, v in base_default.items()
                                                                  if k in self._space}} if own[CONFIG_LIST_KNOB] else {}
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
