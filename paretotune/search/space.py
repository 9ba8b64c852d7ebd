"""The space an engine searches: kernel-config knobs plus where ACFs come from.

Three ACF kinds: ``generated`` (CompileIQ samples ACFs from ptxas's control space: infinite, only engines
that can sample it may search it), ``finite`` (a list whose option 0 is "no ACF") and ``none``. Finite and
config-only spaces are a product of small categorical choices, so every engine can search them, and they can
be enumerated (``size``) and exhausted.

A space may also be an explicit list of configs (a ``@triton.autotune`` kernel's ``configs``, a hand-picked
list): that list is one categorical knob, :data:`CONFIG_LIST_KNOB`, whose values are whole configs (dicts).
:meth:`SearchSpace.config` flattens them, so engines choose an index as for any knob and records hold plain
configs.
"""
from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from paretotune.toolchain.acf_sources import AcfOption

AcfKind = Literal["generated", "finite", "none"]
CONFIG_LIST_KNOB = "config"  # a knob whose values are whole configs, merged into the config it is part of


def config_list_space(configs: list[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Knobs for an explicit list of configs: one categorical knob whose values are the configs."""
    if not configs:
        raise ValueError("an explicit config list needs at least one config")
    return {CONFIG_LIST_KNOB: [dict(c) for c in configs]}


def flatten_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Merge a listed config (the value of :data:`CONFIG_LIST_KNOB`) into the flat config it belongs to."""
    listed = config.get(CONFIG_LIST_KNOB)
    if not isinstance(listed, Mapping):
        return dict(config)
    rest = {k: v for k, v in config.items() if k != CONFIG_LIST_KNOB}
    return {**dict(listed), **rest}


@dataclass(frozen=True)
class SearchSpace:
    """Knob name -> allowed values, and the ACF dimension (``acf_options`` only for ``finite``)."""

    knobs: Mapping[str, list[Any]]
    acf: AcfKind = "none"
    acf_options: tuple[AcfOption, ...] = ()
    ptxas_version: str = "13.3"
    # which knob combinations the kernel takes (None: all); applied once, where proposals are de-duplicated
    constraint: Callable[[Mapping[str, Any]], bool] | None = field(default=None, compare=False)
    fixed: Mapping[str, Any] = field(init=False)  # knobs with one value: part of every config, never searched

    def __post_init__(self) -> None:
        if self.acf == "finite" and not self.acf_options:
            raise ValueError("a finite ACF space needs acf_options (option 0 = no ACF)")
        if self.acf != "finite" and self.acf_options:
            raise ValueError(f"acf_options given for an ACF space of kind {self.acf!r}")
        for name, values in self.knobs.items():
            if not values:
                raise ValueError(f"knob {name!r} has no values")
        object.__setattr__(self, "fixed", {k: v[0] for k, v in self.knobs.items() if len(v) == 1})

    @property
    def free(self) -> dict[str, list[Any]]:
        """Knobs with more than one value: what an engine actually chooses."""
        return {k: list(v) for k, v in self.knobs.items() if len(v) > 1}

    @property
    def size(self) -> int | None:
        """Number of distinct points, or None for a generated ACF space (unbounded)."""
        if self.acf == "generated":
            return None
        n_acf = len(self.acf_options) if self.acf == "finite" else 1
        return math.prod(len(v) for v in self.knobs.values()) * n_acf

    @property
    def searchable(self) -> bool:
        return bool(self.free) or self.acf == "generated" or (self.acf == "finite" and len(self.acf_options) > 1)

    def config(self, chosen: Mapping[str, Any]) -> dict[str, Any]:
        """A full kernel config: the fixed knobs plus the chosen values, in the space's knob order (a listed
        config is flattened in its place)."""
        merged = {**self.fixed, **chosen}
        return flatten_config({k: merged[k] for k in self.knobs})

    def configs_only(self) -> SearchSpace:
        """The same knobs without the ACF dimension (phase 1 of the sequential strategy)."""
        return SearchSpace(knobs=self.knobs, acf="none", ptxas_version=self.ptxas_version, constraint=self.constraint)

    def at_config(self, config: Mapping[str, Any]) -> SearchSpace:
        """Only the ACF dimension, at one fixed kernel config (phase 2 of the sequential strategy)."""
        return replace(self, knobs={k: [_knob_value(self.knobs[k], k, config)] for k in self.knobs})


def _knob_value(values: list[Any], knob: str, config: Mapping[str, Any]) -> Any:
    """The value of ``knob`` in a flat ``config``; for the config-list knob, the listed config it contains."""
    if knob != CONFIG_LIST_KNOB or knob in config and not isinstance(config[knob], Mapping):
        return config[knob]
    for listed in values:
        if all(config.get(k) == v for k, v in listed.items()):
            return listed
    raise KeyError(f"config {dict(config)} is none of the listed configs")


@dataclass(frozen=True)
class NativeSpace:
    """A kernel language's own description of its config space, for an engine that searches it natively
    (:mod:`paretotune.search.helion_search`) rather than as knob lists. ``spec`` is Helion's ConfigSpec of the
    kernel bound to the campaign's first shape; every call into it runs under ``context()`` (the target's device
    features: a ConfigSpec made for a target must answer what that target supports, not this machine)."""

    kind: Literal["helion"]
    spec: Any
    context: Callable[[], AbstractContextManager[Any]] = field(default=contextlib.nullcontext, compare=False)


def point_key(config: Mapping[str, Any], acf_sha: str | None) -> str:
    """A hashable identity of (config, ACF content) for de-duplication."""
    return json.dumps([config, acf_sha], sort_keys=True, default=str)
