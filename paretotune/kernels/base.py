"""What a kernel adapter is: a kernel-config space plus the ways to build a candidate.

- :meth:`KernelAdapter.compile_ptx` compiles ahead of time, without a GPU, to PTX for a target. ACFs only
  act in ptxas, so one PTX per (config, shape) serves every ACF: the static path runs ptxas on it per ACF.
- :meth:`KernelAdapter.precompile` is the same compile with the candidate's ACF, run in the CPU pool of a GPU
  campaign so that the GPU worker's launch finds it in Triton's disk cache.
- :meth:`KernelAdapter.make_inputs` makes one set of seeded input (and output) tensors for a shape, and
  :meth:`KernelAdapter.prepare` (GPU only) compiles with the ACF through the normal launch path and returns a
  zero-argument launch *bound to given inputs*.

Why inputs are separate from the build: the same kernel timed on different buffers differs by more than an
ACF gains (buffer placement; docs/results.md, "Buffers"). So the workers make one timing buffer set per shape and bind
the baseline, the control and every candidate to it, while each candidate's correctness check gets its own fresh
seeded set (:mod:`paretotune.measure.arms`). Output tensors a kernel writes into belong to the input set
(Triton specs name one with ``output``); a Helion host function allocates its result per call instead. A spec
without a ``reference`` is checked against the baseline build's output on those fresh inputs
(``Prepared.reference`` is then None).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from paretotune.records import Shape
from paretotune.toolchain.arch import TargetArch


@dataclass(frozen=True)
class KernelPTX:
    """One kernel's PTX and the launch metadata its resource usage depends on."""

    ptx: str
    kernel_name: str
    num_warps: int
    dynamic_shared: int  # bytes requested at launch (Triton's metadata.shared)
    enable_fp_fusion: bool = True


Inputs = dict[str, Any]  # named tensors (inputs and the outputs the kernel writes into), from make_inputs


@dataclass
class Prepared:
    """A candidate bound to one input set: ``launch()`` runs the kernel once on it and returns its output."""

    launch: Callable[[], Any]
    reference: Callable[[], Any] | None  # expected output from the same inputs; None: the baseline's output
    atol: float
    rtol: float
    kernel_name: str
    inputs: Inputs  # the tensors launch() reads and writes (shared with every other arm of a timing set)
    output: Any = None  # the output tensor, if the kernel writes into one: poisoned with NaN before the check
    # arguments an in-place kernel is declared to write (checked as written even where a launch leaves their bytes
    # as they were); ``launch()`` returns only what the kernel itself returns, so that no check's work is timed
    writes: tuple[Any, ...] = ()


class KernelAdapter(Protocol):
    """A kernel the campaign can search. Implementations: TritonAdapter, HelionAdapter."""

    name: str

    def space(self) -> dict[str, list[Any]]:
        """Kernel-config knobs and their allowed values (the first value of each is not special)."""

    def default_config(self, shape: Shape) -> dict[str, Any]:
        """The config the baseline uses for ``shape`` (where the kernel's user gets it: the kernel author's
        pick, or a Helion kernel's per-shape AOT heuristic). Every ratio is to that shape's baseline."""

    def constraint(self) -> Callable[[Mapping[str, Any]], bool] | None:
        """Which configs of :meth:`space` the kernel takes (None: all of them)."""

    def compile_ptx(self, config: Mapping[str, Any], shape: Shape, target: TargetArch) -> KernelPTX:
        """Compile to PTX for ``target`` without a GPU (no ACF: ptxas runs later, per ACF)."""

    def precompile(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, target: TargetArch) -> KernelPTX:
        """Compile with ``acf`` exactly as :meth:`prepare` will, without a GPU, so that the GPU worker finds the
        build in Triton's disk cache; returns the PTX (the same as :meth:`compile_ptx`: ACFs act in ptxas)."""

    def make_inputs(self, shape: Shape, device: str, seed: int) -> Inputs:
        """Fresh random inputs and output buffers for ``shape`` (seeded, never zeros)."""

    def prepare(self, config: Mapping[str, Any], shape: Shape, acf: Path | None, inputs: Inputs) -> Prepared:
        """Build for the GPU with ``acf`` applied; the launch reads and writes ``inputs`` (from make_inputs)."""

    def check_shape(self, shape: Shape, config: Mapping[str, Any]) -> None:
        """Make the shape's inputs on the meta device (no memory, no GPU); raise :class:`UnknownShapeKey` for a
        key the input factories never read (``dtyp: float32``), or what the factories raise. Every adapter has
        this one shape check, and :mod:`paretotune.campaign.resolve` runs it on every shape of a campaign before
        any compile; an adapter that cannot tell a bad shape on the meta device lets it pass (Helion: a factory
        that needs real tensors), and the baseline then fails with the kernel's own message."""

    def check_space(self, space: Mapping[str, list[Any]]) -> None:
        """Raise ValueError (``'<knob>: why'``) for a knob value the kernel cannot be built with."""


class UnknownShapeKey(ValueError):
    """A shape key no input factory of the kernel reads: a typo, or a size meant for another kernel."""

    def __init__(self, key: str, read: list[str]) -> None:
        super().__init__(key)
        self.key, self.read = key, read


class _ReadKeys(Mapping[str, Any]):
    """A read-only view of shape parameters that remembers which keys were read."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self._params = params
        self.read: set[str] = set()
        self.listed = False  # iterated: every key may have been used

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self._params[key]

    def __contains__(self, key: object) -> bool:
        found = key in self._params
        if found:
            self.read.add(key)  # type: ignore[arg-type]  # looked up by name: the key is used
        return found

    def __iter__(self) -> Iterator[str]:
        self.listed = True
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)


def check_shape_keys(params: Mapping[str, Any], make: Callable[[Mapping[str, Any]], Any]) -> None:
    """Call ``make(params)`` (the kernel's factories) and refuse a key it never read. A factory that iterates
    the parameters may use any of them, so then nothing is refused."""
    tracked = _ReadKeys(params)
    make(tracked)
    unknown = [k for k in params if k not in tracked.read]
    if unknown and not tracked.listed:
        raise UnknownShapeKey(unknown[0], sorted(tracked.read))


def baseline_config(adapter: KernelAdapter, shapes: tuple[Shape, ...]) -> dict[str, Any]:
    """The baseline candidate's config: the shapes' common baseline config, or ``{}`` when they differ, which
    stands for "each shape at its own baseline config" (only adapters with per-shape baselines produce it)."""
    configs = [adapter.default_config(s) for s in shapes]
    return configs[0] if all(c == configs[0] for c in configs[1:]) else {}


def validate_config(space: Mapping[str, list[Any]], config: Mapping[str, Any], where: str) -> None:
    """Reject configs with unknown knobs or values outside the space (one-line message). A flat config from an
    explicit config list must contain one of the listed configs."""
    from paretotune.errors import UserError
    from paretotune.search.space import CONFIG_LIST_KNOB

    config = dict(config)
    listed = space.get(CONFIG_LIST_KNOB)
    if listed and not isinstance(config.get(CONFIG_LIST_KNOB), Mapping) and all(isinstance(c, Mapping) for c in listed):
        match = next((c for c in listed if all(config.get(k) == v for k, v in c.items())), None)
        if match is None:
            raise UserError(f"{where}: {config} is none of the kernel's {len(listed)} listed configs")
        config = {k: v for k, v in config.items() if k not in match}
    for key, value in config.items():
        if key not in space:
            raise UserError(f"{where}: unknown kernel knob '{key}' (known: {', '.join(space)})")
        if value not in space[key]:
            raise UserError(f"{where}.{key}: value {value!r} not in the search space {space[key]!r}")


def baseline_words(adapter: KernelAdapter, shapes: tuple[Shape, ...]) -> str:
    """What messages call the baseline's config: where it came from (the AOT heuristic's, the spec's default,
    Helion's default, ...), so that no message says "default config" of a heuristic's pick."""
    from paretotune.records import baseline_phrase

    for shape in shapes:
        adapter.default_config(shape)  # fills baseline_source
    return baseline_phrase(dict(getattr(adapter, "baseline_source", None) or {}), [s.label for s in shapes])
