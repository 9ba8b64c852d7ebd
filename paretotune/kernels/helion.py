"""Helion kernels: a user-facing spec (:class:`HelionKernel`) and its adapter.

Helion turns one Python function plus a ``helion.Config`` into a Triton kernel (``_helion_<fn>``) and a host
function that launches it through ``_launcher=``. Both build paths reuse that host function:

- ahead of time (no GPU): bind ``meta`` tensors and run the host function with a launcher that compiles each
  launch instead of running it (:mod:`paretotune.kernels.helion_aot`);
- on the GPU: bind real tensors, put the ACF into the config (``advanced_controls_file``) so Helion's codegen
  passes ``ptx_options='--apply-controls <acf>'`` to Triton, and launch the host function directly (no
  autotuning: we never call the ``Kernel`` object itself).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paretotune.compat.helion import import_helion
from paretotune.kernels.base import Inputs, KernelPTX, Prepared, UnknownShapeKey, check_shape_keys
from paretotune.kernels.helion_aot import NUM_SMS, AotBinder, sms_of, target_codegen
from paretotune.kernels.helion_space import device_features
from paretotune.records import Shape
from paretotune.search.space import NativeSpace
from paretotune.toolchain.arch import TargetArch


PLAIN_FN_SETTINGS: dict[str, Any] = {"static_shapes": True}  # how an undecorated kernel function is wrapped


def as_helion_kernel(fn: Any) -> Any:
    """``fn`` if it is a ``helion.Kernel``, else the undecorated function wrapped with :data:`PLAIN_FN_SETTINGS`
    (the kernel paretotune measures, and so the one a pin or a shipped heuristic builds)."""
    helion = import_helion()
    return fn if isinstance(fn, helion.Kernel) else helion.kernel(fn, **PLAIN_FN_SETTINGS)


def shipped_settings(obj: Any) -> tuple[Callable[..., Any], dict[str, Any]]:
    """The Python function under a kernel object, and the settings another wrap of it must keep to build the
    kernel its users run: those not about autotuning that differ from ``helion.kernel``'s defaults
    (``static_shapes=False`` of Helion's AOT kernels, ``ignore_warnings``); :data:`PLAIN_FN_SETTINGS` for an
    undecorated function. Helion's autotuner, given another wrap, tunes another kernel otherwise."""
    helion = import_helion()
    fn = getattr(obj, "fn", obj)
    if not isinstance(obj, helion.Kernel):
        return fn, dict(PLAIN_FN_SETTINGS)
    mine, plain = obj.settings.to_dict(), helion.kernel(fn).settings.to_dict()
    return fn, {k: v for k, v in mine.items() if not k.startswith("autotune") and v != plain.get(k)}


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

    Optional parts: without ``space`` the space is Helion's own ConfigSpec for the bound kernel and shape
    (:mod:`paretotune.kernels.helion_space`). The baseline config per shape is the one a plain call runs with:
    the AOT heuristic (``heuristic``, a file path; by default the file Helion itself finds for the target,
    :mod:`paretotune.kernels.helion_heuristic`), else ``default``, else the kernel's own single ``config=``,
    else Helion's default config.
    """

    fn: Any
    inputs: Callable[[Mapping[str, Any], str, int], dict[str, Any]]
    args: Callable[[dict[str, Any], Mapping[str, Any]], tuple[Any, ...]]
    space: dict[str, list[Any]] | None = None  # None: Helion's own ConfigSpec (helion_space)
    default: dict[str, Any] | None = None
    reference: Callable[[dict[str, Any]], Any] | None = None  # None: compare with the baseline build's output
    atol: float = 1e-2
    rtol: float = 1e-2
    shapes: dict[str, dict[str, Any]] = field(default_factory=dict)  # named example shapes
    heuristic: str | None = None  # an AOT heuristic file to use instead of the one Helion would find
    # for kernels that return None and write into arguments: the positions of the arguments they write (the
    # correctness check compares them with the baseline build's; see Prepared.writes)
    outputs: tuple[int, ...] = ()


def spec_from_kernel(kernel: Any, factory: Callable[[Mapping[str, Any], str, int], Any], *,
                     atol: float | None = None, rtol: float | None = None) -> HelionKernel:
    """A spec for a bare Helion kernel and an input factory ``(shape, device, seed) -> args``: Helion's own
    space, the per-shape AOT heuristic (or Helion's default) as the baseline, the baseline's output as the
    reference."""
    helion = import_helion()
    if not isinstance(kernel, helion.Kernel):
        raise TypeError(f"kernel.inputs is given, so the source must be a Helion kernel (@helion.kernel or "
                        f"@helion.aot_kernel), not a {type(kernel).__name__}")
    if not callable(factory):
        raise TypeError(f"kernel.inputs must name a function (shape, device, seed) -> args, not a "
                        f"{type(factory).__name__}")

    def inputs(shape: Mapping[str, Any], device: str, seed: int) -> dict[str, Any]:
        return {"args": tuple(factory(shape, device, seed))}

    return HelionKernel(fn=kernel, inputs=inputs, args=lambda made, shape: made["args"],
                        atol=1e-2 if atol is None else atol, rtol=1e-2 if rtol is None else rtol,
                        outputs=tuple(getattr(factory, "outputs", ())))


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
        self.aot = AotBinder(lambda: self.kernel, lambda shape, device: self._inputs_and_args(shape, device, 0)[1])
        # the campaign's shapes, target and kind (see use_campaign): a derived space and the baselines need them
        self._shapes: tuple[Shape, ...] = ()
        self._target = TargetArch(90)
        self._gpu = False
        self._baselines: dict[str, dict[str, Any]] = {}
        self.baseline_source: dict[str, str] = {}  # shape label -> where its baseline config came from
        self._derived: dict[str, list[Any]] | None = None
        self.space_note: str | None = None  # one line on what a derived space leaves out, for the run output

    def use_campaign(self, shapes: tuple[Shape, ...], target: TargetArch, gpu: bool) -> None:
        """Tell the adapter the campaign's shapes and target, and whether candidates run on a GPU (then knobs
        whose codegen needs a GPU, e.g. ``tensor_descriptor`` indexing, are searched too)."""
        self._shapes, self._target, self._gpu = tuple(shapes), target, gpu
        self._baselines.clear()
        self._derived = None

    @property
    def _tensor_descriptors(self) -> bool:
        return self._gpu and self._target.capability >= 90

    @property
    def kernel(self) -> Any:
        """The ``helion.Kernel`` (the undecorated function is wrapped with ``static_shapes=True`` once)."""
        if self._kernel is None:
            self._kernel = as_helion_kernel(self.spec.fn)
        return self._kernel

    @property
    def static_shapes(self) -> bool:
        """Whether the kernel is specialized to each input's sizes and strides, as built and measured here: its own
        setting (Helion's AOT kernels ship with ``False``), which a pinned config must be used with, since the same
        config generates other Triton code under the other setting."""
        return bool(self.kernel.settings.static_shapes)

    @property
    def kernel_name(self) -> str:
        """What Triton, ptxas and ncu call the device kernel: ``_helion_<python function name>``."""
        return f"_helion_{self.kernel.name}"

    def space(self) -> dict[str, list[Any]]:
        """The spec's hand-written space, or Helion's own for the campaign's shapes (:mod:`.helion_space`)."""
        if self.spec.space is not None:
            return dict(self.spec.space)
        if self._derived is None:
            from paretotune.kernels.helion_space import CPU_RESTRICTION, derive_space, intersect

            if not self._shapes:
                raise ValueError(f"kernel {self.name}: a space derived from Helion's ConfigSpec needs the "
                                 "campaign's shapes (use_campaign)")
            with device_features(self._tensor_descriptors):
                spaces = [derive_space(self.config_spec(s)) for s in self._shapes]
            self._derived = intersect(spaces, [self.default_config(s) for s in self._shapes])
            self.space_note = None if self._tensor_descriptors else CPU_RESTRICTION
        return dict(self._derived)

    def native_space(self) -> NativeSpace | None:
        """Helion's ConfigSpec (first shape) for engines that search it natively, with the target's device
        features to run it under; None for a hand-written space."""
        if self.spec.space is not None or not self._shapes:
            return None
        features = self._tensor_descriptors
        return NativeSpace(kind="helion", spec=self.config_spec(self._shapes[0]),
                           context=lambda: device_features(features))

    def config_spec(self, shape: Shape) -> Any:
        """Helion's ConfigSpec of the kernel bound to ``shape`` (meta tensors, the target's SM count)."""
        with device_features(self._tensor_descriptors):
            bound, _ = self.aot.bind(shape, sms_of(self._target))
        return bound.config_spec

    def constraint(self) -> Callable[[Mapping[str, Any]], bool] | None:
        """For a derived space: whether every shape's ConfigSpec takes a config as it is; else None."""
        if self.spec.space is not None:
            return None
        from paretotune.kernels.helion_space import accepts

        specs = [self.config_spec(s) for s in self._shapes]
        features = self._tensor_descriptors

        def helion_accepts(config: Mapping[str, Any]) -> bool:
            if not config:  # the per-shape baseline marker
                return True
            with device_features(features):
                return all(accepts(cs, config) for cs in specs)

        return helion_accepts

    def heuristic_path(self) -> Path | None:
        """The AOT heuristic file the baseline comes from: the campaign's ``kernel.heuristic``, else the one
        Helion itself would load for the target (:mod:`.helion_heuristic`), else None."""
        if self.spec.heuristic is not None:
            return Path(self.spec.heuristic)
        from paretotune.kernels.helion_heuristic import find_heuristic

        return find_heuristic(self.kernel, self._target.capability)

    def _heuristic_config(self, path: Path, shape: Shape) -> dict[str, Any]:
        """The heuristic's pick for ``shape``, asked with meta tensors (shapes and dtypes are what heuristics
        read), else with CPU tensors; a heuristic that fails on both is a one-line error naming the file."""
        from paretotune.errors import UserError
        from paretotune.kernels.helion_heuristic import HeuristicError, heuristic_config

        try:
            return heuristic_config(self.kernel, path, self.aot.args(shape, "meta"))
        except HeuristicError as meta_error:
            try:
                return heuristic_config(self.kernel, path, self.aot.args(shape, "cpu"))
            except HeuristicError:
                raise UserError(f"kernel {self.name}: shape {shape.label}: AOT heuristic {meta_error}") from None

    def default_config(self, shape: Shape) -> dict[str, Any]:
        """The baseline config for ``shape``: what Helion runs a plain call with (the AOT heuristic's pick), else
        the spec's default, else the kernel's own single ``config=``, else Helion's default config (completed by
        Helion's normalize when the space is derived). ``baseline_source`` says which, per shape."""
        if shape.label in self._baselines:
            return dict(self._baselines[shape.label])
        path = self.heuristic_path()
        own = list(getattr(self.kernel, "configs", None) or [])
        if path is not None:
            config = self._heuristic_config(path, shape)
            self.baseline_source[shape.label] = f"AOT heuristic {path.name} (sm_{self._target.capability})"
        elif self.spec.default is not None:
            config = dict(self.spec.default)
            self.baseline_source[shape.label] = "the spec's default"
        elif len(own) == 1:
            config = dict(getattr(own[0], "config", own[0]))
            self.baseline_source[shape.label] = "the kernel's own config="
        else:
            config = {}
            self.baseline_source[shape.label] = self._no_heuristic_note()
        if self.spec.space is None:
            from paretotune.kernels.helion_space import normalized

            with device_features(self._tensor_descriptors or "tensor_descriptor" in repr(config)):
                spec = self.config_spec(shape)
                config = normalized(spec, {**dict(spec.default_config().config), **config})
        self._baselines[shape.label] = config
        return dict(config)

    def _no_heuristic_note(self) -> str:
        """Says plainly that the baseline is Helion's default, and for an AOT kernel which file was missing."""
        from paretotune.kernels.helion_heuristic import expected_names, is_aot_kernel, source_file

        if not is_aot_kernel(self.kernel):
            return "Helion's default config (not an AOT kernel; a plain call would autotune)"
        names = expected_names(self.kernel, self._target.capability)
        return (f"Helion's default config (no AOT heuristic for sm_{self._target.capability}: looked for {names[0]} "
                f"and older beside {Path(source_file(self.kernel)).name})")

    def authors_timing(self) -> str | None:
        """``cudagraph`` or ``events`` where the kernel's module says how its authors time it (a pretuned kernel's
        ``use_cudagraph()``, which its ``main()`` follows), else None."""
        fn = getattr(self.kernel.fn, "__globals__", {}).get("use_cudagraph")
        if not callable(fn):
            return None
        return "cudagraph" if fn() else "events"

    def _resolve(self, config: Mapping[str, Any], shape: Shape) -> Mapping[str, Any]:
        """An empty config stands for each shape's own baseline config (acf-only over per-shape baselines)."""
        return config if config else self.default_config(shape)

    def helion_config(self, config: Mapping[str, Any], acf: Path | None = None) -> Any:
        """The ``helion.Config`` a candidate runs with: its knobs plus the ACF (``""``: none)."""
        return import_helion().Config(**{**config, "advanced_controls_file": _acf_option(acf)})

    def _inputs_and_args(self, shape: Shape, device: str, seed: int) -> tuple[dict[str, Any], tuple[Any, ...]]:
        inputs = self.spec.inputs(shape.params, device, seed)
        return inputs, tuple(self.spec.args(inputs, shape.params))

    def check_shape(self, shape: Shape, config: Mapping[str, Any]) -> None:
        """The factories on meta, else on CPU (some need real tensors): a bad value fails here, naming the shape."""
        def make(device: str) -> Callable[[Mapping[str, Any]], None]:
            return lambda params: self.spec.args(self.spec.inputs(params, device, 0), params)
        try:
            check_shape_keys(shape.params, make("meta"))
        except (KeyError, UnknownShapeKey):
            raise
        except Exception:  # noqa: BLE001 - some factories need real tensors
            check_shape_keys(shape.params, make("cpu"))

    def check_space(self, space: Mapping[str, list[Any]]) -> None:
        """Helion checks its own config values when it builds one; nothing is known to refuse earlier."""

    def triton_source(self, config: Mapping[str, Any], shape: Shape, acf: Path | None = None) -> str:
        """The generated Triton module (device kernel + host function) for ``config``; no GPU needed."""
        bound, _ = self.aot.bind(shape, NUM_SMS[90])
        with target_codegen(90):
            return str(bound.to_triton_code(self.helion_config(self._resolve(config, shape), acf)))

    def compile_ptx(self, config: Mapping[str, Any], shape: Shape, target: TargetArch) -> KernelPTX:
        return self.precompile(config, shape, None, target)

    def precompile(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, target: TargetArch) -> KernelPTX:
        """Compile as the GPU launch will (CPU pool), so the GPU worker finds the build in Triton's disk cache.

        Helion's codegen still runs in the GPU worker (tens of ms); Triton's compile and ptxas do not. Returns
        the PTX, which the ACF does not change (it acts in ptxas).
        """
        config = self._resolve(config, shape)
        return self.aot.precompile(shape, self.helion_config(config, acf), acf, target, self.kernel_name, self.name)

    def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
        return self.spec.inputs(shape.params, device, seed)

    def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
        """Bind ``inputs`` and build ``config`` (``{}``: the shape's baseline config). Helion's host function
        allocates its output on every call (the caching allocator hands the same block back once the previous
        output is freed); only the inputs are shared between arms."""
        helion_config = self.helion_config(self._resolve(config, shape), acf)
        args = tuple(self.spec.args(inputs, shape.params))
        bound = self.kernel.bind(args)
        host = bound.compile_config(helion_config, allow_print=False)
        bound.set_config(helion_config)  # a plain ``kernel(*args)`` call uses this config too, never autotunes
        reference = self.spec.reference

        def launch_once() -> Any:
            return host(*args)  # the kernel's call alone: every clock times what launch() does

        return Prepared(launch=launch_once, reference=None if reference is None else lambda: reference(inputs),
                        atol=self.spec.atol, rtol=self.spec.rtol, kernel_name=self.kernel_name, inputs=inputs,
                        writes=tuple(args[i] for i in self.spec.outputs))
