"""What the program's kernel calls did: per kernel, per distinct signature, calls, GPU time, and (first call only)
the arguments' metadata, which arguments the call wrote, the config it ran with and its grid.

Only the outermost kernel call is recorded: launches inside an ``@triton.autotune``'s benchmarking, inside
``@triton.heuristics`` or inside a Helion kernel's generated host code belong to the call that made them (a
thread-local depth). Every call is counted. A *sampled* call also has its signature key computed (tensor
dtype, shape, strides, device, alignment; scalars by value) and is timed: GPU time from two CUDA events around
each of its launches (Triton's launch hooks: compiling and Python's launch overhead are not GPU time), read
lazily, never synchronizing, the events reused; on the CPU (the Triton interpreter) wall time around the call.
``timing="sampled"`` (the default) samples the first :data:`TIME_FIRST` calls of each kernel and then each call
with probability 1 / :data:`SAMPLE_EVERY` (a seeded draw, so a program that alternates shapes is not sampled in
step with them), and scales: a signature's calls are the kernel's calls times its share of the sampled ones,
its time its timed calls' mean times that. The key is most of what a call costs the program
(``benchmarks/bench_capture_ablation.py`` measures it; docs/results.md has the figure), so most calls skip it.
``"all"`` samples (keys and times) every call: exact counts.
The first call of each signature also clones its tensor arguments to see which ones the call changed (written)
and, for ``--values``, saves them; that call synchronizes (:mod:`.first_call`). A failure of the recorder's own
code marks the kernel with the reason and never reaches the program; a call the kernel itself fails is re-raised
untouched and not recorded.
"""
from __future__ import annotations

import json
import os
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from paretotune.capturing import SAMPLE_EVERY, TIME_FIRST, TIMING, first_call
from paretotune.capturing.kernel_info import KernelInfo, helion_info, triton_info
from paretotune.capturing.metadata import Undescribable, leaf_key
from paretotune.capturing.tally import KernelRecord, Signature, import_path, kernel_doc, versions

FORMAT = "paretotune-capture/1"
RECORD = "capture.json"  # what a capture folder's record is called
MAX_SIGNATURES = 64  # per kernel; calls of further signatures are counted together (a seed that changes per call)
# pending CUDA event pairs before the finished ones are read (never blocking) and their events recycled: few, since
# until then every timed launch creates two events (a 23-step training step never had 512 pending)
DRAIN_AT = 32


class Recorder:
    """Collects the calls; :meth:`document` is the JSON the campaign writer reads (``capture.json``)."""

    def __init__(self, *, values: bool | Iterable[str] = False, values_dir: Path | None = None,
                 timing: str = "sampled") -> None:
        """``values``: save first-call tensors (all kernels, or those named) under ``values_dir/values/``;
        ``timing``: "sampled" or "all" GPU calls timed."""
        if timing not in TIMING:
            raise ValueError(f"timing: {timing!r} is not one of {', '.join(TIMING)}")
        self.timing = timing
        self._sample_all = timing == "all"
        self._rng = random.Random(0)  # which calls past each kernel's first ones are sampled
        self._rate = 1.0 / SAMPLE_EVERY
        self.values = values if isinstance(values, bool) else frozenset(values)
        self.values_dir = values_dir
        self.pid = os.getpid()
        self.started = time.time()
        self._kernels: dict[int, KernelRecord] = {}  # id of the kernel object -> its record
        self._locals: dict[Any, KernelRecord] = {}  # code object -> the record of kernels made inside a function
        self._records: list[KernelRecord] = []
        self._lock = threading.RLock()
        self._tls = threading.local()
        self._pending: deque[tuple[Signature, Any, Any]] = deque()
        self._free_events: list[Any] = []  # read events, recorded again by later launches
        self._event: Any = None  # torch.cuda.Event, looked up once
        self._timing_problem: str | None = None

    # -- entry points (the hooks) ------------------------------------------------------------------------------
    def triton_run(self, obj: Any, orig: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                   launch_level: bool) -> Any:
        """``run`` of a JITFunction/InterpretedFunction (``launch_level``) or an Autotuner/Heuristics."""
        if kwargs.get("warmup"):
            return orig(obj, *args, **kwargs)
        if getattr(self._tls, "depth", 0):
            frame = getattr(self._tls, "frame", None)
            if launch_level and frame is not None:
                first_call.note_launch(frame, args, kwargs)
            return orig(obj, *args, **kwargs)
        record = self._known(obj)
        if record is not None and self._skips(record):
            return self._count(record, orig, obj, args, kwargs)
        return self._outer(obj, "triton", lambda: orig(obj, *args, **kwargs), args, kwargs, launch_level)

    def helion_call(self, obj: Any, orig: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``helion.Kernel.__call__``."""
        import torch

        if getattr(self._tls, "depth", 0) or torch.compiler.is_compiling():
            return orig(obj, *args, **kwargs)
        record = self._known(obj)
        if record is not None and self._skips(record):
            return self._count(record, orig, obj, args, kwargs)
        return self._outer(obj, "helion", lambda: orig(obj, *args, **kwargs), args, kwargs, False)

    # -- a call that is only counted -----------------------------------------------------------------------------
    def _known(self, obj: Any) -> KernelRecord | None:
        """The kernel's record if it has one (a kernel made inside a function: its code's), without making one."""
        record = self._kernels.get(id(obj))
        if record is None and self._locals:
            record = self._locals.get(getattr(_function(obj), "__code__", None))
        return record

    def _skips(self, record: KernelRecord) -> bool:
        """Is this call of a known kernel left out of the sample (past its first calls, not drawn)?"""
        return not self._sample_all and record.calls >= TIME_FIRST and self._rng.random() >= self._rate

    def _count(self, record: KernelRecord, orig: Callable[..., Any], obj: Any, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Any:
        """The kernel's own call, counted once it returned; launches inside it are its own (depth 1)."""
        tls = self._tls
        tls.depth = 1
        try:
            result = orig(obj, *args, **kwargs)
        finally:
            tls.depth = 0
        with self._lock:
            record.calls += 1
        return result

    # -- one outermost call ------------------------------------------------------------------------------------
    def _outer(self, obj: Any, kind: str, call: Callable[[], Any], args: tuple[Any, ...], kwargs: dict[str, Any],
               launch_level: bool) -> Any:
        tls = self._tls
        tls.depth = 1
        try:
            plan = None
            try:
                plan = self._plan(obj, kind, args, kwargs)
            except Exception as exc:  # noqa: BLE001 - the recorder's failure must not reach the program
                self._fail(obj, kind, exc)
            if plan is None:
                return call()
            record, sig, first, cuda = plan
            if first is not None:
                tls.frame = first
                if launch_level:
                    first_call.note_launch(first, args, kwargs)
            launches: list[list[Any]] | None = [] if cuda else None
            tls.launches = launches
            start = time.perf_counter()
            try:
                result = call()
            except BaseException:
                if first is not None:
                    with self._lock:  # the next call of this signature is its first successful one
                        record.signatures = {k: v for k, v in record.signatures.items() if v is not sig}
                raise
            finally:
                tls.frame = tls.launches = None
            self._stop(record, sig, start, launches, first is not None)
            if first is not None:
                try:
                    self._finish_first(record, sig, first, result)
                except Exception as exc:  # noqa: BLE001
                    self._fail(obj, kind, exc)
            return result
        finally:
            tls.depth = 0

    def _record(self, obj: Any, kind: str) -> KernelRecord:
        """The kernel's record, made on its first call. Kernel objects made inside a function (a new one per call
        of it) share one record per code object: a loop must not grow one row per iteration."""
        record = self._kernels.get(id(obj))
        if record is not None:
            return record
        fn = _function(obj)
        code = getattr(fn, "__code__", None)
        local = code is not None and "<locals>" in getattr(fn, "__qualname__", "")
        with self._lock:
            record = self._locals.get(code) if local else self._kernels.get(id(obj))
            if record is None:
                info = triton_info(obj) if kind == "triton" else helion_info(obj)
                record = KernelRecord(len(self._records), info, problem=info.problem)
                self._records.append(record)
                if local:
                    self._locals[code] = record
                else:
                    self._kernels[id(obj)] = record  # the record keeps obj alive: its id is never reused
        return record

    def _plan(self, obj: Any, kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        import torch

        record = self._record(obj, kind)
        cuda = _on_cuda(args) or _on_cuda(tuple(kwargs.values()))  # Liger-Kernel passes every argument by keyword
        if cuda and torch.cuda.is_current_stream_capturing():
            with self._lock:
                record.calls += 1
                record.sampled += 1
                record.graph_sampled += 1
            return None
        key = (tuple(leaf_key(a) for a in args),
               tuple((k, leaf_key(v)) for k, v in kwargs.items() if k not in first_call.NOT_ARGS))
        first = None
        with self._lock:
            sig = record.signatures.get(key)
            if sig is None:
                if len(record.signatures) >= MAX_SIGNATURES:
                    sig = record.other
                else:
                    sig = record.signatures[key] = Signature()
                    if record.problem is None:
                        first = sig
        record.timing.add("cuda_events" if cuda else "wall")
        begun = None
        if first is not None:
            try:
                begun = first_call.begin(record.info, args, kwargs)
            except Exception as exc:  # noqa: BLE001 - an argument it cannot describe: still counted and timed
                self._fail(obj, kind, exc)
        return record, sig, begun, cuda

    # -- timing ------------------------------------------------------------------------------------------------
    def launch_enter(self, *args: Any, **kwargs: Any) -> None:
        """Triton's ``launch_enter_hook``: a CUDA event right before each launch of a recorded call (so neither
        the JIT's compile nor the autotuner's choice nor Python's launch overhead is counted as GPU time)."""
        launches = getattr(self._tls, "launches", None)
        if launches is None:
            return
        try:
            event = self._new_event()
            event.record()
            launches.append([event, None])
        except Exception:  # noqa: BLE001 - never fail a launch; that call goes untimed
            return

    def launch_exit(self, *args: Any, **kwargs: Any) -> None:
        """Triton's ``launch_exit_hook``: the event right after the launch."""
        launches = getattr(self._tls, "launches", None)
        if not launches or launches[-1][1] is not None:
            return
        try:
            event = self._new_event()
            event.record()
            launches[-1][1] = event
        except Exception:  # noqa: BLE001
            return

    def _new_event(self) -> Any:
        try:
            return self._free_events.pop()
        except IndexError:
            if self._event is None:
                import torch

                self._event = torch.cuda.Event
            return self._event(enable_timing=True)

    def _stop(self, record: KernelRecord, sig: Signature, start: float, launches: list[list[Any]] | None,
              first: bool) -> None:
        """Count the sampled call and its time: wall time on the CPU, else the GPU time of its launches. On the
        first call of an autotuned or Helion kernel only the last launch is the call's own (the ones before
        benchmarked configs)."""
        if launches is None:
            elapsed = (time.perf_counter() - start) * 1e3
            with self._lock:
                record.calls += 1
                record.sampled += 1
                sig.seen += 1
                sig.time_ms += elapsed
                sig.timed += 1
            return
        pairs = [(a, b) for a, b in launches if b is not None]
        if first and pairs and ("autotune" in record.info.layers or record.info.kind == "helion"):
            pairs = pairs[-1:]
        with self._lock:
            record.calls += 1
            record.sampled += 1
            sig.seen += 1
            if not pairs:
                record.untimed_calls += 1
            else:
                sig.timed += 1
            self._pending.extend((sig, a, b) for a, b in pairs)
            if len(self._pending) >= DRAIN_AT:
                self._drain(block=False)

    def _drain(self, *, block: bool) -> None:
        while self._pending:
            sig, start, end = self._pending[0]
            if not block and not end.query():
                return
            self._pending.popleft()
            if block:
                end.synchronize()
            sig.time_ms += start.elapsed_time(end)
            self._free_events += (start, end)

    # -- the first call of a signature --------------------------------------------------------------------------
    def _finish_first(self, record: KernelRecord, sig: Signature, frame: first_call.FirstCall, result: Any) -> None:
        doc = first_call.finish(frame, result)
        if self._wants_values(record.info) and self.values_dir is not None and frame.clones is not None:
            import torch

            folder = self.values_dir / "values" / f"k{record.index}"
            folder.mkdir(parents=True, exist_ok=True)
            torch.save([c.cpu() if c is not None else None for c in frame.clones], folder / f"{doc['id']}.pt")
            doc["values"] = f"values/k{record.index}/{doc['id']}.pt"
        with self._lock:
            sig.doc = doc

    def _wants_values(self, info: KernelInfo) -> bool:
        return self.values is True or (not isinstance(self.values, bool) and info.name in self.values)

    def _fail(self, obj: Any, kind: str, exc: Exception) -> None:
        try:
            record = self._record(obj, kind)
        except Exception:  # noqa: BLE001 - nothing to attach the reason to
            return
        what = str(exc) if isinstance(exc, Undescribable) else \
            f"the capture could not describe a call ({type(exc).__name__}: {exc})"
        with self._lock:
            if record.problem is None:
                record.problem = " ".join(what.split())[:300]

    # -- the result --------------------------------------------------------------------------------------------
    def document(self) -> dict[str, Any]:
        """Everything recorded, as JSON-able data (GPU times synchronized once, here)."""
        with self._lock:
            try:
                if self._pending:
                    self._drain(block=True)
            except Exception as exc:  # noqa: BLE001 - a faulted CUDA context: report what was read
                self._timing_problem = f"GPU times incomplete ({type(exc).__name__}: {exc})"
                self._pending.clear()
            kernels = [kernel_doc(r) for r in self._records]
        timing = sorted({t for r in self._records for t in r.timing})
        return {"format": FORMAT, "started": self.started, "duration_s": time.time() - self.started,
                "timing": timing[0] if len(timing) == 1 else ("mixed" if timing else "none"),
                "sampling": self.timing,
                "timing_problem": self._timing_problem, "versions": versions(), "kernels": kernels}

    def save(self, out: Path, program: dict[str, Any], status: Any) -> Path:
        """Write :meth:`document` with the program's command line and exit status as ``out/capture.json``
        (atomically: a half-written record is never read)."""
        doc = self.document()
        code = status if isinstance(status, int) else (0 if status is None else 1)
        doc["program"] = {**program, "exit_code": code, "sys_path": import_path()}
        try:
            import torch

            if torch.cuda.is_available() and torch.cuda.is_initialized():
                doc["gpu"] = torch.cuda.get_device_name()
        except Exception:  # noqa: BLE001 - no GPU name is no reason to lose the record
            pass
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / f".{RECORD}.tmp"
        tmp.write_text(json.dumps(doc, indent=1, default=repr), encoding="utf-8")
        return tmp.replace(out / RECORD)



def _function(obj: Any) -> Any:
    """The Python function under a kernel object's layers (autotuner, heuristics, JIT: each has ``.fn``)."""
    while hasattr(obj, "fn") and not hasattr(obj, "__code__"):
        obj = obj.fn
    return obj


def _on_cuda(args: tuple[Any, ...]) -> bool:
    import torch

    for a in args:
        if isinstance(a, torch.Tensor):
            return a.is_cuda
    for a in args:
        if isinstance(a, (tuple, list)):
            return _on_cuda(tuple(a))
    return False
