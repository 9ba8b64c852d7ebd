"""The arms of one shape share one timing buffer set; each candidate's correctness check gets fresh inputs.

Search (:mod:`paretotune.measure.gpu_worker`) and ``validate`` (:mod:`paretotune.validate.worker`)
both go through here, so both time the baseline, the control and every candidate of a shape on the same input
and output tensors: the same build timed on other buffers moves by more than the ACF gains the search looks
for (docs/results.md). One set rather than several rotated ones: every arm then differs only in its build,
and no between-set spread is added to any arm's samples (the absolute times are those of one placement; only
ratios are compared).

Correctness is checked before a candidate is timed, on inputs made from its own seed, so a kernel that only
works on the timing data (or leaves outputs unwritten) is caught. A spec without a ``reference`` is compared with
the baseline build (the shape's baseline config, no ACF) on the same fresh inputs, with the spec's tolerances:
everything it returns (a tensor, a tuple or list of them, nested, or None) and every argument it wrote.

Kernels that update an argument in place (``qkv`` normalised and rotated where it lies) would see their own
output as input if launched twice. So every input tensor is restored from a pristine copy before each checked
launch, the arguments the baseline writes are found the way Helion's autotuner finds them (launch on the
inputs, compare with a copy: ``torch.equal``), and on the timing buffers those arguments are restored before
every timing round, so that no round starts from values earlier rounds drifted (:meth:`ShapeArms.time`).

Nothing here needs CUDA: with CPU tensors and an injected :data:`~paretotune.measure.timing.Timer` the same
code runs in tests.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from paretotune.measure.ceiling import tensor_bytes
from paretotune.measure.cupti import ClockUnavailable
from paretotune.measure.timing import (Timer, Timing, TimingMethod,
                                        TimingSetting, check_output, choose_method)
from paretotune.kernels.base import Inputs, KernelAdapter, Prepared
from paretotune.records import Shape

TIMING_SEED = 12345  # search's timing buffers (each candidate's correctness inputs come from its own seed)


def input_seed(campaign_seed: int, candidate_id: int) -> int:
    """Each candidate gets its own fresh random inputs, reproducible from the campaign seed."""
    return campaign_seed * 100003 + candidate_id


def sync(device: str) -> None:
    """Wait for the device's queued kernels (nothing to wait for on the CPU)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def poison(prepared: Prepared) -> None:
    """Fill the output the kernel writes into with NaN, so that an unwritten element fails the check."""
    out = prepared.output
    if out is not None and out.is_floating_point():
        out.fill_(float("nan"))


def tensor_leaves(tree: Any) -> list[Any]:
    """The tensors in an input set or an output (dicts, tuples and lists nested in any way)."""
    import torch

    from paretotune.compat.torch import tree_flatten

    return [leaf for leaf in tree_flatten(tree)[0] if isinstance(leaf, torch.Tensor)]


def writable_leaves(inputs: Inputs) -> list[Any]:
    """The input tensors a launch can write and a copy can restore: not an expanded view (a stride of 0 over
    more than one element, e.g. a broadcast scale), into which ``copy_`` refuses to write (Helion's fp8_matmul
    example has one)."""
    return [t for t in tensor_leaves(inputs)
            if not any(stride == 0 and size > 1 for stride, size in zip(t.stride(), t.shape, strict=True))]


def clone_tree(tree: Any) -> Any:
    """A copy of an output whose tensors no later launch can overwrite."""
    import torch

    from paretotune.compat.torch import tree_map

    return tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, tree)


def restore(leaves: list[Any], pristine: list[Any]) -> None:
    for leaf, copy in zip(leaves, pristine, strict=True):
        leaf.copy_(copy)


def declared_writes(prepared: Prepared) -> tuple[Any, ...]:
    """The tensors ``prepared`` says its launch writes: its ``output`` and its ``writes``."""
    return tuple(t for t in (prepared.output, *prepared.writes) if t is not None)


def written_by(leaves: list[Any], pristine: list[Any], declared: tuple[Any, ...] = ()) -> list[int]:
    """Which tensors a launch changed (its copies taken before it): Helion's autotuner's test, ``torch.equal``;
    and always the ``declared`` ones (:func:`declared_writes`). An output buffer is made empty, and a reused allocation
    can already hold the very values the launch writes: compared alone it would look unwritten, and any other
    build's write into it (a rounding apart) would read as a write into an argument only read."""
    import torch

    return [i for i, (leaf, copy) in enumerate(zip(leaves, pristine, strict=True))
            if any(_is_tensor(leaf, d) for d in declared) or not torch.equal(leaf, copy)]


def _is_tensor(leaf: Any, declared: Any) -> bool:
    """Whether ``declared`` is ``leaf``, or a tensor over the same memory of the same shape."""
    return leaf is declared or (
        leaf.data_ptr() == declared.data_ptr() and leaf.shape == declared.shape and leaf.device == declared.device)


def poison_is_safe(base: Prepared, leaves: list[Any], pristine: list[Any], returned: Any, after: dict[int, Any],
                   device: str) -> bool:
    """Whether the output buffer may be filled with NaN before a candidate's launch: only if the baseline build
    gives the same result from a poisoned buffer, i.e. the kernel writes it without reading it. An in-place
    argument named as the output (a captured kernel's written argument) is read: poisoning it would feed NaN to
    every candidate, so it is only restored."""
    out = base.output
    if out is None or not out.is_floating_point():
        return False
    restore(leaves, pristine)
    poison(base)
    again = base.launch()
    sync(device)
    if tensor_leaves(returned) and check_output(again, returned, base.atol, base.rtol):
        return False
    return not any(check_output(leaves[i], expected, base.atol, base.rtol) for i, expected in after.items())


def check_candidate(adapter: KernelAdapter, config: dict[str, Any], shape: Shape, acf: Path | None, device: str,
                    seed: int, waiting: Callable[[], None] = lambda: None) -> str | None:
    """None if the candidate's output on fresh inputs (from ``seed``) matches the expected one, else why not.

    Expected: the spec's reference, or without one the baseline build's result on the same inputs: what it
    returns and the arguments it writes (any other argument the candidate changes is a wrong answer too).
    Inputs are restored from a pristine copy before each launch, so an in-place kernel starts from the same
    values every time; a write-only output buffer is poisoned with NaN first (:func:`poison_is_safe`), so that
    an element the candidate leaves unwritten fails. ``waiting()`` is called once the candidate's launch is
    issued, before the wait for the GPU (where a kernel that never ends hangs: the worker's parent gives that
    wait a deadline of its own).
    """
    inputs = adapter.make_inputs(shape, device, seed)
    leaves = writable_leaves(inputs)
    pristine = [leaf.clone() for leaf in leaves]
    cand = adapter.prepare(config, shape, acf, inputs)
    if cand.reference is not None:
        expected = cand.reference()
        restore(leaves, pristine)
        poison(cand)
        got = cand.launch()
        waiting()
        sync(device)
        return check_output(got, expected, cand.atol, cand.rtol)
    base = adapter.prepare(adapter.default_config(shape), shape, None, inputs)
    returned = clone_tree(base.launch())
    sync(device)
    written = written_by(leaves, pristine, declared_writes(base))
    if not tensor_leaves(returned) and not written:
        return "the baseline returned no tensor and wrote no argument (the kernel spec has no reference)"
    after = {i: leaves[i].clone() for i in written}
    safe = poison_is_safe(base, leaves, pristine, returned, after, device)
    restore(leaves, pristine)
    if safe:
        poison(cand)
    got = cand.launch()
    waiting()
    sync(device)
    problem = check_output(got, returned, cand.atol, cand.rtol) if tensor_leaves(returned) else None
    if problem:
        return problem
    for i, expected in after.items():
        problem = check_output(leaves[i], expected, cand.atol, cand.rtol)
        if problem:
            return f"input tensor {i} (the kernel writes it): {problem}"
    stray = [i for i in written_by(leaves, pristine) if i not in after]
    if stray:
        return f"wrote into input tensor {stray[0]}, which the baseline build only reads"
    return None


@dataclass
class ShapeArms:
    """One shape's timing buffers, its baseline bound to them, and the method that times every arm.

    ``written``: the input tensors the baseline's first launch changed (in-place arguments, output buffers);
    ``pristine`` holds their values from before it, put back before every timing round (:meth:`time`).
    ``authors_method``: how the kernel's authors time it, where that differs from ``method`` (their figure is
    recorded beside the ranking one, never ranked)."""

    adapter: KernelAdapter
    shape: Shape
    device: str
    inputs: Inputs
    baseline: Prepared
    method: TimingMethod
    written: list[int] = field(default_factory=list)
    pristine: list[Any] = field(default_factory=list)
    method_source: str = ""
    authors_method: TimingMethod | None = None
    nbytes: int = 0  # of the baseline's arguments and outputs (:func:`paretotune.measure.ceiling.tensor_bytes`)
    call_work: tuple[str, ...] = ()  # the GPU activities of one baseline call, from the first CUPTI look

    def bind(self, config: dict[str, Any], acf: Path | None, waiting: Callable[[], None] = lambda: None) -> Prepared:
        """Another arm (control or candidate) on this shape's timing buffers, launched once (built, warm);
        ``waiting()`` as in :func:`check_candidate`."""
        prepared = self.adapter.prepare(config, self.shape, acf, self.inputs)
        prepared.launch()
        waiting()
        sync(self.device)
        return prepared

    def restore(self) -> None:
        """Put the arguments the kernel writes back to their values before any launch."""
        if self.written:
            leaves = writable_leaves(self.inputs)
            restore([leaves[i] for i in self.written], self.pristine)
            sync(self.device)

    def time(self, prepared: Prepared, timer: Timer, method: TimingMethod | Literal["host"] | None = None) -> Timing:
        """One timing round of an arm, starting from the pristine arguments (an in-place kernel's launches in
        earlier rounds never feed this one); by the shape's method unless another is named."""
        self.restore()
        return timer(prepared.launch, method or self.method)


def authors_timing(adapter: KernelAdapter) -> TimingMethod | None:
    """How the kernel's authors time it, where they say so: a pretuned Helion kernel's module defines
    ``use_cudagraph()`` (True: CUDA graphs; False: plain events), which their own ``main()`` follows."""
    prefer = getattr(adapter, "authors_timing", None)
    return prefer() if callable(prefer) else None


def open_shape(adapter: KernelAdapter, shape: Shape, device: str, seed: int, setting: TimingSetting,
               timer: Timer) -> ShapeArms:
    """Make the shape's timing buffers from ``seed``, bind the baseline, note which arguments it writes, and
    choose the timing method (:func:`choose_clock`). The kernel authors' own method, where their module states
    one and it differs, is kept beside it (``authors_method``): recorded, never the ranking clock."""
    inputs = adapter.make_inputs(shape, device, seed)
    leaves = writable_leaves(inputs)
    before = [leaf.clone() for leaf in leaves]
    baseline = adapter.prepare(adapter.default_config(shape), shape, None, inputs)
    returned = baseline.launch()
    sync(device)
    written = written_by(leaves, before, declared_writes(baseline))
    pristine = [before[i] for i in written]
    del before
    arms = ShapeArms(adapter, shape, device, inputs, baseline, "cupti", written, pristine,
                     nbytes=tensor_bytes(inputs, returned))
    del returned
    arms.method, arms.method_source = choose_clock(arms, setting, timer)
    authors = authors_timing(adapter)
    arms.authors_method = authors if authors is not None and authors != arms.method else None
    return arms


def choose_clock(arms: ShapeArms, setting: TimingSetting, timer: Timer) -> tuple[TimingMethod, str]:
    """The shape's timing method and why. A named setting is used as it is. ``auto`` ranks by a GPU-side clock:
    a first CUPTI timing of the baseline gives its GPU time, CUDA graphs under
    :data:`~paretotune.measure.timing.SHORT_KERNEL_MS`, CUPTI above; a call that graphs cannot capture (a host
    sync inside) stays on CUPTI; events only where neither clock works, and the reason says so."""
    if setting != "auto":
        return setting, "evaluation.timing"
    try:
        first = arms.time(arms.baseline, timer, "cupti")
    except ClockUnavailable as exc:
        return _graphs_or_events(arms, timer, f"CUPTI could not time the call ({exc})")
    arms.call_work = first.call_work
    method = choose_method("auto", first.median_ms)
    if method == "cupti":
        return "cupti", f"GPU time (CUPTI) {first.median_ms * 1000:.1f} us per call, at least the short-call bound"
    try:  # a call that syncs with the host inside cannot be captured: its shape stays on CUPTI
        arms.time(arms.baseline, timer, "cudagraph")
    except Exception as exc:  # noqa: BLE001 - only a failed capture is answered here; the rest is raised
        if not capture_failed(exc):
            raise
        said = (str(exc).strip().splitlines() or [""])[0][:160]
        return "cupti", f"GPU time (CUPTI); CUDA graphs could not capture its call ({type(exc).__name__}: {said})"
    return "cudagraph", f"GPU time (CUPTI) {first.median_ms * 1000:.1f} us per call, under the short-call bound"


def _graphs_or_events(arms: ShapeArms, timer: Timer, why: str) -> tuple[TimingMethod, str]:
    """Without CUPTI: CUDA graphs if they capture the call, else events, labelled as the host-timed fallback."""
    try:
        arms.time(arms.baseline, timer, "cudagraph")
        return "cudagraph", f"GPU time (CUDA graphs); {why}"
    except Exception as exc:  # noqa: BLE001 - a failed capture or clock: the last resort follows, labelled
        if not capture_failed(exc) and not isinstance(exc, ClockUnavailable):
            raise
        return "events", (f"events, host time included: neither GPU clock could time this call ({why}; CUDA "
                          f"graphs: {type(exc).__name__})")


def capture_failed(exc: BaseException) -> bool:
    """Did a CUDA graph capture fail (the call synchronised with the host, or launched what graphs cannot hold)?
    Helion's low_mem_dropout example: "operation failed due to a previous error during capture". Capture errors
    invalidate the capture, not the CUDA context, so events can time the shape."""
    text = f"{type(exc).__name__}: {exc}".lower()
    return "capture" in text or "capturing" in text


def arms_notes(arms: ShapeArms) -> dict[str, Any]:
    """What a shape's record says about how its arms were timed: why this method, and which input tensors the
    kernel writes (restored before every timing round), and the GPU activities one call runs (every clock times
    them all: a timed call that runs more than the kernel says so here)."""
    notes: dict[str, Any] = {"timing_source": arms.method_source}
    if arms.call_work:
        notes["gpu_work"] = list(arms.call_work)
    if arms.authors_method:
        notes["authors_timing"] = arms.authors_method
    if arms.written:
        notes["restored_inputs"] = arms.written
    return notes
