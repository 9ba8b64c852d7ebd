"""A campaign may narrow an adapter's knob space or change its baseline config without touching code."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from paretotune.kernels.base import Inputs, KernelAdapter, KernelPTX, Prepared
from paretotune.records import Shape
from paretotune.toolchain.arch import TargetArch


def _in_list(config: Mapping[str, Any], listed: list[Any]) -> bool:
    """A flat config contains one of the listed configs."""
    return any(all(config.get(k) == v for k, v in c.items()) for c in listed)


class OverriddenAdapter:
    """Wraps an adapter; ``space`` replaces the named knobs' values (a key inside an explicit config list keeps
    the listed configs whose value it allows), ``default`` the named baseline values (per shape, on top of the
    inner adapter's baseline for that shape)."""

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
        self._narrowed = {k: v for k, v in (space or {}).items() if k not in inside}  # plain knobs
        self._space = {**own, **self._narrowed}
        self._listed = own[CONFIG_LIST_KNOB] if inside else None  # the narrowed config list, if narrowed
        self._override = dict(default or {})

    def space(self) -> dict[str, list[Any]]:
        return dict(self._space)

    def default_config(self, shape: Shape) -> dict[str, Any]:
        """The inner baseline for ``shape`` with the campaign's ``kernel.default`` values on top."""
        base_default = self.inner.default_config(shape)
        # a narrowed knob whose default fell out of the space takes the first allowed value
        for key, values in self._narrowed.items():
            if base_default.get(key) not in values:
                base_default[key] = values[0]
        if self._listed is not None and not _in_list(base_default, self._listed):
            # a baseline outside the narrowed config list takes its first config (plain knobs kept)
            base_default = {**dict(self._listed[0]), **{k: v for k, v in base_default.items()
                                                         if k in self._space}} if self._listed else {}
        return {**base_default, **self._override}

    def constraint(self) -> Callable[[Mapping[str, Any]], bool] | None:
        return self.inner.constraint()

    @property
    def baseline_source(self) -> dict[str, str]:
        """The inner adapter's, with the campaign's ``kernel.default`` named where it sets values."""
        inner = dict(getattr(self.inner, "baseline_source", None) or {})
        if not self._override:
            return inner
        return {label: f"{source}, with the campaign's kernel.default" for label, source in inner.items()}

    def __getattr__(self, name: str) -> Any:
        """Anything else (space_note, authors_timing, ...) is the inner adapter's."""
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def compile_ptx(self, config: Mapping[str, Any], shape: Shape, target: TargetArch) -> KernelPTX:
        return self.inner.compile_ptx(self._resolve(config, shape), shape, target)

    def precompile(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, target: TargetArch) -> KernelPTX:
        return self.inner.precompile(self._resolve(config, shape), shape, acf, target)

    def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
        return self.inner.make_inputs(shape, device, seed)

    def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
        return self.inner.prepare(self._resolve(config, shape), shape, acf, inputs)

    def check_shape(self, shape: Shape, config: Mapping[str, Any]) -> None:
        self.inner.check_shape(shape, self._resolve(config, shape))

    def check_space(self, space: Mapping[str, list[Any]]) -> None:
        self.inner.check_space(space)

    def _resolve(self, config: Mapping[str, Any], shape: Shape) -> Mapping[str, Any]:
        """The empty per-shape baseline marker means this adapter's baseline (with the overrides)."""
        return config if config else self.default_config(shape)
