"""The space an engine searches: kernel-config knobs plus where ACFs come from.

Three ACF kinds: ``generated`` (CompileIQ samples ACFs from ptxas's control space: infinite, only engines
that can sample it may search it), ``finite`` (a list whose option 0 is "no ACF") and ``none``. Finite and
config-only spaces are a product of small categorical choices, so every engine can search them, and they can
be enumerated (``size``) and exhausted.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from paretotune.toolchain.acf_sources import AcfOption

AcfKind = Literal["generated", "finite", "none"]


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
        """A full kernel config: the fixed knobs plus the chosen values, in the space's knob order."""
        merged = {**self.fixed, **chosen}
        return {k: merged[k] for k in self.knobs}

    def configs_only(self) -> SearchSpace:
        """The same knobs without the ACF dimension (phase 1 of the sequential strategy)."""
        return SearchSpace(knobs=self.knobs, acf="none", ptxas_version=self.ptxas_version, constraint=self.constraint)

    def at_config(self, config: Mapping[str, Any]) -> SearchSpace:
        """Only the ACF dimension, at one fixed kernel config (phase 2 of the sequential strategy)."""
        return replace(self, knobs={k: [config[k]] for k in self.knobs})


def point_key(config: Mapping[str, Any], acf_sha: str | None) -> str:
    """A hashable identity of (config, ACF content) for de-duplication."""
    return json.dumps([config, acf_sha], sort_keys=True, default=str)
