"""Triton kernels: a user-facing spec (:class:`TritonKernel`) and its adapter.

Ahead-of-time compiles reproduce what ``JITFunction.run`` would build (:mod:`paretotune.kernels.triton_jit`).
"""
from __future__ import annotations

import contextlib
import inspect
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paretotune.errors import CandidateFailure, UserError
from paretotune.kernels.base import Inputs, KernelPTX, Prepared, check_shape_keys
from paretotune.kernels.triton_jit import LAUNCH_RULES, compile_like_jit, config_dict, listed, ptx_of
from paretotune.kernels.triton_jit import split_config, unwrap
from paretotune.records import Shape
from paretotune.toolchain.arch import TargetArch


@dataclass(frozen=True)
class TritonKernel:
    """How to search and run a Triton kernel: the kernel, an input factory and a grid are enough.

    - ``fn``: the ``@triton.jit`` function, or an ``@triton.autotune`` (and/or ``@triton.heuristics``)
      decorated one, unchanged: its ``configs`` become the searched config list, its first config the baseline,
      its ``prune_configs_by["early_config_prune"]`` is applied per shape, ``reset_to_zero``/``restore_value``
      before every launch, and its heuristics fill their parameters.
    - ``inputs``: ``inputs(shape)`` returning the named tensors (made on the right device and seeded by
      paretotune: ``torch.randn(n)`` is enough), or ``inputs(shape, device, seed)`` doing that itself (with
      ``device="meta"`` only shapes matter). Random data, never zeros.
    - ``grid``: Triton's form, ``grid(meta)`` over the kernel's arguments by name (constexprs included), or
      ``grid(shape, config)``, or a fixed tuple.
    - Kernel parameters are filled by name from the config, then the inputs, then the shape's sizes;
      ``args(inputs, shape, config)`` adds or overrides values (strides, derived sizes).
    - ``reference(inputs)`` is the expected output; without it the output is checked against the baseline
      build's. ``output`` names the input entry the kernel writes (default: the last one).
    - ``space``: knob -> values (a product), or an explicit list of configs (dicts or ``triton.Config``s);
      ``constraint(config) -> bool`` keeps only the configs it accepts. ``default`` is the baseline config, or
      a function of the shape's sizes returning it (a launcher that picks warps from the row width).
    Config keys in :data:`~.triton_jit.LAUNCH_OPTIONS` become launch options, the rest kernel parameters.
    """

    fn: Any
    inputs: Callable[..., dict[str, Any]]
    grid: Callable[..., tuple[int, ...]] | tuple[int, ...]
    args: Callable[[dict[str, Any], Mapping[str, Any], Mapping[str, Any]], dict[str, Any]] | None = None
    reference: Callable[[dict[str, Any]], Any] | None = None
    output: str | None = None
    space: Mapping[str, list[Any]] | Sequence[Any] | None = None
    default: Mapping[str, Any] | Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    constraint: Callable[[Mapping[str, Any]], bool] | None = None
    atol: float = 1e-2
    rtol: float = 1e-2
    shapes: dict[str, dict[str, Any]] = field(default_factory=dict)  # named example shapes


MAX_CONSTRAINED_PRODUCT = 100_000  # a constrained product space is listed in full: keep it enumerable


def _arity(fn: Callable[..., Any]) -> int:
    try:
        return len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return -1


class TritonAdapter:
    """Adapter for a :class:`TritonKernel` spec."""

    def __init__(self, name: str, spec: TritonKernel) -> None:
        self.name = name
        self.spec = spec
        try:
            self.parts = unwrap(spec.fn)
        except TypeError as exc:
            raise UserError(f"kernel {name}: fn: {exc}") from None
        self._space = self._make_space()
        self.baseline_source: dict[str, str] = {}  # shape label -> where its baseline config came from

    def _make_space(self) -> dict[str, list[Any]]:
        from paretotune.search.space import config_list_space

        given = self.spec.space
        if given is None and self.parts.autotuner is not None:
            given = list(self.parts.autotuner.configs)
        if given is None:
            given = {}
        if isinstance(given, Mapping):
            if self.spec.constraint is None:
                return {k: list(v) for k, v in given.items()}
            size = 1
            for values in given.values():
                size *= len(values)
            if size > MAX_CONSTRAINED_PRODUCT:
                raise UserError(f"kernel {self.name}: space: {size} configs is too many to apply constraint to "
                                f"(at most {MAX_CONSTRAINED_PRODUCT}); list the configs instead")
            configs: list[dict[str, Any]] = [dict(zip(given, values, strict=True))
                                             for values in itertools.product(*given.values())]
        else:
            configs = [config_dict(c) for c in given]
        if self.spec.constraint is not None:
            configs = [c for c in configs if self.spec.constraint(c)]
        if not configs:
            raise UserError(f"kernel {self.name}: space: no config left (constraint rejects every one)")
        return config_list_space(configs)

    def space(self) -> dict[str, list[Any]]:
        return {k: list(v) for k, v in self._space.items()}

    def default_config(self, shape: Shape) -> dict[str, Any]:
        """The baseline config for ``shape``: the spec's default (called with the shape's sizes when it is a
        function), else for an autotuned kernel with ``early_config_prune`` the first config it keeps for this
        shape, else the first listed config, else each knob's first value."""
        from paretotune.search.space import flatten_config

        if callable(self.spec.default) or self.spec.default is not None:
            self.baseline_source[shape.label] = "the spec's default"
            return dict(self.spec.default(shape.params) if callable(self.spec.default) else self.spec.default)
        tuner, prune = self.parts.autotuner, self._prune()
        if tuner is not None and prune is not None and self.spec.space is None:
            named = self.named_args(self.make_inputs(shape, "meta", 0), shape, config_dict(tuner.configs[0]))
            kept = prune(list(tuner.configs), {k: v for k, v in named.items() if k not in tuner.configs[0].kwargs})
            self.baseline_source[shape.label] = "the autotuner's first config its early_config_prune keeps"
            return config_dict(kept[0])
        self.baseline_source[shape.label] = ("the autotuner's first config" if tuner is not None and
                                             self.spec.space is None else "the space's first config")
        return flatten_config({k: v[0] for k, v in self._space.items()})

    def constraint(self) -> None:
        """The spec's ``constraint`` already filtered the config list this adapter's space holds."""
        return None

    def _prune(self) -> Callable[..., Any] | None:
        tuner = self.parts.autotuner
        return getattr(tuner, "early_config_prune", None) if tuner is not None else None

    def _resolve(self, config: Mapping[str, Any], shape: Shape) -> dict[str, Any]:
        """The concrete config for one shape: the empty per-shape baseline marker (``{}``, see
        :func:`~paretotune.kernels.base.baseline_config`) is this shape's baseline config."""
        return dict(config) if config else self.default_config(shape)

    # -- arguments -------------------------------------------------------------------------------------------
    def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
        """The spec's tensors: a one-argument factory is run on ``device`` with torch's RNG seeded."""
        if _arity(self.spec.inputs) != 1:
            return dict(self.spec.inputs(shape.params, device, seed))
        import torch

        with _seeded(device, seed), torch.device(device):
            return dict(self.spec.inputs(shape.params))

    def named_args(self, inputs: dict[str, Any], shape: Shape, config: Mapping[str, Any]) -> dict[str, Any]:
        """Every kernel parameter by name (see :class:`TritonKernel` for where values come from)."""
        params = [p.name for p in self.parts.jit.params]
        _, kernel_config = split_config(config)
        named = {k: shape.params[k] for k in params if k in shape.params}  # by name: sizes never iterated
        named.update({k: v for k, v in inputs.items() if k in params})
        named.update(kernel_config)
        if self.spec.args is not None:
            named.update(self.spec.args(inputs, shape.params, config))
        for heuristic in self.parts.heuristics:
            for key, rule in heuristic.values.items():
                named[key] = rule({**named, **kernel_config})
        missing = [n for n in params if n not in named]
        if missing:
            raise ValueError(f"kernel {self.name}: no value for parameter(s) {', '.join(missing)}: name them in "
                             "the inputs, the shape or the config, or give args=")
        return named

    def _ordered_args(self, inputs: dict[str, Any], shape: Shape, config: Mapping[str, Any]) -> list[Any]:
        named = self.named_args(inputs, shape, config)
        return [named[p.name] for p in self.parts.jit.params]

    def grid(self, named: Mapping[str, Any], shape: Shape, config: Mapping[str, Any]) -> tuple[int, ...]:
        grid = self.spec.grid
        if not callable(grid):
            return tuple(grid)
        if _arity(grid) == 2:
            return tuple(grid(shape.params, config))
        return tuple(grid({**named, **config}))

    def output_name(self, inputs: Mapping[str, Any]) -> str:
        return self.spec.output or list(inputs)[-1]

    def check_shape(self, shape: Shape, config: Mapping[str, Any] | None = None) -> None:
        """Make a config's (the default's) arguments and grid on the meta device; raise
        :class:`~paretotune.kernels.base.UnknownShapeKey` for a shape key that neither the spec's functions
        read nor names a kernel parameter, else what the spec raises."""
        def make(params: Mapping[str, Any]) -> None:
            seen = Shape(shape.label, params)  # type: ignore[arg-type]  # a read-tracking view of the sizes
            default = self.default_config(seen)  # a per-shape default reads sizes too
            resolved = dict(config) if config else default
            inputs = self.make_inputs(seen, "meta", 0)
            self.grid(self.named_args(inputs, seen, resolved), seen, resolved)

        check_shape_keys(shape.params, make)

    def check_space(self, space: Mapping[str, list[Any]]) -> None:
        """Launch options must be valid, also inside an explicit config list (``triton.Config`` fields)."""
        from paretotune.search.space import CONFIG_LIST_KNOB

        for knob, values in space.items():
            if knob == CONFIG_LIST_KNOB:
                for listed in values:
                    if isinstance(listed, Mapping):
                        self.check_space({k: [v] for k, v in listed.items()})
                continue
            rule = LAUNCH_RULES.get(knob)
            for v in values:
                if rule is not None and not (v is None and knob == "maxnreg") and not rule[0](v):
                    raise ValueError(f"{knob}: {v!r} is not a valid value ({rule[1]})")

    def restrict_to(self, shapes: Sequence[Shape]) -> None:
        """Keep only the autotuner's configs that its ``early_config_prune`` keeps on at least one of ``shapes``
        (a config pruned on every shape would only be built to fail); a config pruned on some shapes still
        fails there (:meth:`_check_pruned`)."""
        from paretotune.search.space import CONFIG_LIST_KNOB

        tuner, prune = self.parts.autotuner, self._prune()
        if tuner is None or prune is None or self.spec.space is not None or self.spec.constraint is not None:
            return
        kept: list[dict[str, Any]] = []
        for shape in shapes:
            named = self.named_args(self.make_inputs(shape, "meta", 0), shape, config_dict(tuner.configs[0]))
            nargs = {k: v for k, v in named.items() if k not in tuner.configs[0].kwargs}
            kept += [config_dict(c) for c in prune(list(tuner.configs), nargs) if config_dict(c) not in kept]
        self._space = {CONFIG_LIST_KNOB: [c for c in self._space[CONFIG_LIST_KNOB] if c in kept]}

    def _check_pruned(self, config: Mapping[str, Any], named: Mapping[str, Any]) -> None:
        """A config the autotuner's ``early_config_prune`` drops for this shape is not built."""
        tuner, prune = self.parts.autotuner, self._prune()
        if tuner is None or prune is None:
            return
        from triton import Config

        launch, kernel_config = split_config(config)
        mine = Config(dict(kernel_config), **launch)
        nargs = {k: v for k, v in named.items() if k not in kernel_config}
        kept = prune(list(tuner.configs) + ([] if listed(mine, tuner.configs) else [mine]), nargs)
        if not listed(mine, kept):
            raise CandidateFailure("the kernel's prune_configs_by early_config_prune drops this config for this shape")

    def compile_ptx(self, config: Mapping[str, Any], shape: Shape, target: TargetArch) -> KernelPTX:
        return self.precompile(config, shape, None, target)

    def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
        config = self._resolve(config, shape)
        launch, _ = split_config(config)
        if acf is not None:
            launch["ptx_options"] = f"--apply-controls {acf}"
        named = self.named_args(inputs, shape, config)
        self._check_pruned(config, named)
        args = [named[p.name] for p in self.parts.jit.params]
        grid = self.grid(named, shape, config)
        fn = self.parts.jit
        out_name = self.output_name(inputs)
        tuner = self.parts.autotuner
        zero = [named[n] for n in getattr(tuner, "reset_to_zero", []) or []]
        restore = {n: named[n].clone() for n in getattr(tuner, "restore_value", []) or []}

        def launch_once() -> Any:
            for tensor in zero:
                tensor.zero_()
            for name, saved in restore.items():
                named[name].copy_(saved)
            fn[grid](*args, **launch)
            return inputs[out_name]

        reference = self.spec.reference
        return Prepared(launch=launch_once, reference=None if reference is None else lambda: reference(inputs),
                        atol=self.spec.atol, rtol=self.spec.rtol, kernel_name=fn.__name__, inputs=inputs,
                        output=inputs[out_name])

    def precompile(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, target: TargetArch) -> KernelPTX:
        """Compile with the ACF exactly as the launch will, so the GPU worker finds it in Triton's disk cache.

        Returns the PTX too: an ACF acts only in ptxas, so it is the PTX :meth:`compile_ptx` would give.
        """
        config = self._resolve(config, shape)
        launch, _ = split_config(config)
        if acf is not None:
            launch["ptx_options"] = f"--apply-controls {acf}"
        inputs = self.make_inputs(shape, "meta", 0)
        named = self.named_args(inputs, shape, config)
        self._check_pruned(config, named)
        args = [named[p.name] for p in self.parts.jit.params]
        compiled = compile_like_jit(self.parts.jit, args, launch, target)
        return ptx_of(compiled, int(launch.get("num_warps", 4)))


@contextlib.contextmanager
def _seeded(device: str, seed: int) -> Iterator[None]:
    """torch's global RNG seeded for ``device``, restored afterwards (no GPU state touched for meta/CPU)."""
    import torch

    cuda = [torch.device(device).index or 0] if device.startswith("cuda") else []
    with torch.random.fork_rng(devices=cuda, device_type="cuda"):
        torch.manual_seed(seed)
        yield
