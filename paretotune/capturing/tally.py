"""What a capture keeps per kernel and per signature (calls, sampled calls, time, the first call's description),
and the parts of the capture record that do not depend on how calls were seen: each kernel's entry, scaled from
the sampled calls, the program's import path and the versions of what it ran with. :mod:`.recorder` fills the
tallies while the program runs."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from paretotune.capturing.kernel_info import KernelInfo


@dataclass
class Signature:
    """One distinct signature of a kernel: the sampled calls that had it, their time, the first call's description."""

    seen: int = 0  # sampled calls of the kernel with this signature
    time_ms: float = 0.0  # measured: the timed calls' time
    timed: int = 0  # calls whose time is in time_ms
    doc: dict[str, Any] | None = None  # set once the first call finished

    def estimate_calls(self, calls: int, sampled: int) -> float:
        """Its calls among the kernel's ``calls``, of which ``sampled`` were sampled: exact when all were."""
        return self.seen * calls / sampled if sampled else 0.0

    def estimate_ms(self, calls: int, sampled: int) -> float:
        """Its total time: the timed calls' mean times its estimated calls (nothing timed: no time made up)."""
        return self.time_ms * self.estimate_calls(calls, sampled) / self.timed if self.timed else 0.0


@dataclass
class KernelRecord:
    """One kernel's tally: its signatures (up to the recorder's ``MAX_SIGNATURES``), counts and problem."""

    index: int
    info: KernelInfo
    signatures: dict[Any, Signature] = field(default_factory=dict)
    other: Signature = field(default_factory=Signature)  # signatures past MAX_SIGNATURES
    calls: int = 0  # every outermost call that returned (graph-capture calls included): exact
    sampled: int = 0  # of those, the calls keyed and timed (all of them with timing "all")
    graph_sampled: int = 0  # sampled calls made while a CUDA graph was being captured (not timed, not described)
    untimed_calls: int = 0  # sampled calls on CUDA tensors whose launches Triton's launch hooks did not report
    problem: str | None = None
    timing: set[str] = field(default_factory=set)


def kernel_doc(record: KernelRecord) -> dict[str, Any]:
    """A kernel's record. Counts of signatures and graph-capture calls and all times are scaled from the sampled
    calls to the kernel's ``calls`` (exact where every call was read); ``sampled_calls`` says how many were."""
    info, total, sampled = record.info, record.calls, record.sampled
    sigs = [s for s in record.signatures.values() if s.seen]
    described = sorted((s for s in sigs if s.doc is not None), key=lambda s: -s.estimate_ms(total, sampled))
    problem = record.problem
    if problem is None and sigs and not described:
        problem = "no call of it finished being described"
    undescribed = [s for s in sigs if s.doc is None] + ([record.other] if record.other.seen else [])
    graph = record.graph_sampled * total / sampled if sampled else 0.0
    return {
        "index": record.index, "name": info.name, "kind": info.kind, "layers": list(info.layers),
        "params": list(info.params),
        "source": info.source, "problem": problem,
        "calls": round(total - graph), "sampled_calls": sampled - record.graph_sampled, "graph_calls": round(graph),
        "untimed_calls": record.untimed_calls,
        "time_ms": sum(s.estimate_ms(total, sampled) for s in sigs) + record.other.estimate_ms(total, sampled),
        "timed_calls": sum(s.timed for s in sigs) + record.other.timed,
        "timing": sorted(record.timing),
        "signatures": [{**s.doc, "calls": round(s.estimate_calls(total, sampled)), "sampled_calls": s.seen,
                        "timed_calls": s.timed, "time_ms": s.estimate_ms(total, sampled)} for s in described],
        "undescribed": {"signatures": len(undescribed),
                        "calls": round(sum(s.estimate_calls(total, sampled) for s in undescribed)),
                        "time_ms": sum(s.estimate_ms(total, sampled) for s in undescribed)},
    }


def import_path() -> list[str]:
    """The program's ``sys.path`` as absolute folders (its own edits and ``PYTHONPATH`` included): a campaign
    adds them after its own, so that a kernel's module finds what it imports as it did in the program."""
    out: list[str] = []
    for entry in sys.path:
        path = os.path.abspath(entry or os.curdir)
        if path not in out and os.path.exists(path):
            out.append(path)
    return out


def versions() -> dict[str, str]:
    """Python's version and those of torch and of Triton and Helion where the program imported them."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for name in ("torch", "triton", "helion"):
        if name in sys.modules or name == "torch":
            try:
                out[name] = version(name)
            except PackageNotFoundError:
                pass
    return out
