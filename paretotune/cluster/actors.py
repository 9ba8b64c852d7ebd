"""A set of interchangeable Ray actors, each running one call at a time with a deadline; a call past its
deadline, or one whose actor dies, ends as an :class:`Outcome` and its actor is killed and re-created."""
from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Outcome:
    """How one call ended. ``died``: the actor process died (crash, OOM kill, node loss); ``error``: the
    method raised; ``timeout``: past its deadline (``no-start``: the actor never became ready)."""

    key: Any
    kind: Literal["ok", "error", "died", "timeout", "no-start"]
    slot: int
    worker: dict[str, Any]  # what the actor's ready() reported: node, pid, gpu_ids ({} if it never started)
    elapsed_s: float
    value: Any = None
    detail: str = ""
    preempted: bool = False


@dataclass(eq=False)
class _Call:
    key: Any
    method: str
    args: tuple[Any, ...]
    timeout_s: float
    slot: int | None = None  # pinned to one actor (e.g. ncu on the GPU that measured the candidates)


@dataclass
class _Slot:
    actor: Any = None
    ready_ref: Any = None
    worker: dict[str, Any] = field(default_factory=dict)
    call: _Call | None = None
    ref: Any = None
    started: float = 0.0
    deadline: float = float("inf")


class ActorSet:
    """``size`` interchangeable actors made by ``factory()``; each runs at most one call at a time.

    A fresh actor's deadline covers its start-up (``startup_s``) until its ``ready()`` returns; from then on the
    call has its own ``timeout_s``. A timed-out, dead or ``restart``-ed actor is killed and re-created lazily,
    when the next call needs it.
    """

    def __init__(self, ray: Any, factory: Callable[[], Any], size: int, startup_s: float) -> None:
        self.ray, self.factory, self.startup_s = ray, factory, startup_s
        self.slots = [_Slot() for _ in range(max(1, size))]
        self._queue: deque[_Call] = deque()
        self.restarts = 0

    @property
    def busy(self) -> bool:
        return bool(self._queue) or any(s.ref is not None for s in self.slots)

    def submit(self, key: Any, method: str, args: tuple[Any, ...], timeout_s: float, slot: int | None = None) -> None:
        self._queue.append(_Call(key, method, args, timeout_s, slot))

    def _dispatch(self, now: float) -> None:
        idle = [i for i, s in enumerate(self.slots) if s.ref is None]
        for i in sorted(idle, key=lambda i: self.slots[i].actor is None):  # warm actors first: starting one costs
            slot = self.slots[i]
            k = next((k for k, c in enumerate(self._queue) if c.slot in (None, i)), None)
            if k is None:
                continue
            call = self._queue[k]
            del self._queue[k]
            if slot.actor is None:
                slot.actor = self.factory()
                slot.ready_ref, slot.worker = slot.actor.ready.remote(), {}
            slot.call, slot.started = call, now  # a warming actor's start-up counts from here: lenient
            slot.ref = getattr(slot.actor, call.method).remote(*call.args)
            slot.deadline = now + (call.timeout_s if slot.ready_ref is None else self.startup_s)

    def warm(self) -> None:
        """Start every actor now (they start on first use otherwise), e.g. GPU actors while CPUs compile."""
        for slot in self.slots:
            if slot.actor is None:
                slot.actor = self.factory()
                slot.ready_ref, slot.worker = slot.actor.ready.remote(), {}

    def _refs(self) -> list[Any]:
        return [r for s in self.slots for r in (s.ready_ref, s.ref) if r is not None]

    def _collect(self, done: set[Any], now: float) -> list[Outcome]:
        out = []
        for i, slot in enumerate(self.slots):
            if slot.ready_ref is not None and slot.ready_ref in done:
                try:
                    slot.worker = self.ray.get(slot.ready_ref)
                except self.ray.exceptions.RayError:
                    pass  # the pending call fails with the reason
                slot.ready_ref = None
                if slot.call is not None:
                    slot.deadline = now + slot.call.timeout_s
            if slot.ref is None or slot.call is None:
                continue
            base = {"key": slot.call.key, "slot": i, "worker": slot.worker, "elapsed_s": now - slot.started}
            if slot.ref in done:
                try:
                    out.append(Outcome(kind="ok", value=self.ray.get(slot.ref), **base))
                except self.ray.exceptions.RayActorError as exc:
                    out.append(Outcome(kind="died", detail=_died_detail(exc), preempted=exc.preempted, **base))
                    self.restart(i)
                except self.ray.exceptions.RayError as exc:
                    out.append(Outcome(kind="error", detail=_first_line(exc), **base))
                slot.ref = slot.call = None
            elif now >= slot.deadline:
                out.append(Outcome(kind="timeout" if slot.ready_ref is None else "no-start", **base))
                self.restart(i)
        return out

    def restart(self, i: int) -> None:
        """Kill the actor in slot ``i`` (a hung call cannot be cancelled any other way); re-created on demand."""
        slot = self.slots[i]
        if slot.actor is not None:
            with contextlib.suppress(Exception):  # already dead
                self.ray.kill(slot.actor, no_restart=True)
            self.restarts += 1
        self.slots[i] = _Slot()

    def close(self) -> None:
        for i, slot in enumerate(self.slots):
            if slot.actor is not None:
                self.restart(i)
        self._queue.clear()


def drain(ray: Any, sets: Sequence[ActorSet]) -> Iterator[tuple[int, Outcome]]:
    """Run every set's calls, yielding ``(set index, outcome)`` as each ends; what the consumer submits
    meanwhile runs too. One ``ray.wait`` covers all sets, so CPU and GPU actors work at the same time."""
    while any(s.busy for s in sets):
        now = time.monotonic()
        for s in sets:
            s._dispatch(now)
        refs = [r for s in sets for r in s._refs()]
        deadline = min((sl.deadline for s in sets for sl in s.slots if sl.ref is not None), default=now + 1.0)
        done: set[Any] = set()
        if refs:
            ready, _ = ray.wait(refs, num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
            if ready:
                ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            done = set(ready)
        now = time.monotonic()
        for i, s in enumerate(sets):
            for outcome in s._collect(done, now):
                yield i, outcome


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return (lines[-1] if lines else type(exc).__name__)[:300]


def _died_detail(exc: Any) -> str:
    if getattr(exc, "actor_init_failed", False):
        return f"worker failed to start: {_first_line(exc)}"
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip() and not ln.startswith("\t")]
    text = lines[-1] if lines else "actor died"
    return text.split(" Some common causes")[0].removeprefix("The actor is dead because ")[:240]
