"""The Ray backend (``execution: {backend: ray}``): the same evaluation as the local backend, spread over a cluster.

Static/compile work runs in a pool of CPU actors, each initialized once with :func:`init_worker` (it imports
torch and Triton, which takes seconds); measurement runs in one actor per GPU that hosts the local GPU
worker's :func:`serve` loop. Both keep the local backend's isolation rules: one call in flight per actor and a
deadline per call; a call past its deadline, or one whose actor dies, becomes a failed TrialRecord with the
same wording as the local pool, and the actor is killed and re-created. A fatal CUDA error restarts the GPU
actor (its context is poisoned). Actors are independent processes, so unlike the local pool a crash never
forces the other in-flight candidates to run again. Records flow back to the campaign loop, which stores them.

Ray is imported only when this backend is chosen. ``address: auto`` joins a running cluster (``RAY_ADDRESS``,
the latest ``ray start``, or a Ray instance found running on this machine), else starts a local instance
limited to ``evaluation.workers`` CPUs; ``address: local`` always starts one. A local instance we started is
shut down at the end; a cluster we joined is only disconnected from; a connection the caller made is left
alone. Workers import paretotune by module, so it must be installed (or be the driver's working directory) on
every node; ACF bytes travel with each call, so nodes need no shared filesystem for them. Worker output goes to
Ray's logs (``/tmp/ray/session_latest/logs``), not the terminal. GPU actors live in :mod:`.ray_gpu`.
"""
from __future__ import annotations

import contextlib
import logging
import os
import socket
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from paretotune.campaign.load import Campaign
from paretotune.errors import UserError
from paretotune.execution.evaluators import StaticEvaluator
from paretotune.execution.pool import STARTUP_GRACE_S, WorkerPool
from paretotune.execution.pool import _failed as failed_record
from paretotune.execution.static_job import WorkerContext
from paretotune.extras import require
from paretotune.objectives.base import Objective
from paretotune.records import Candidate, TrialRecord
from paretotune.store.atomic import atomic_write
from paretotune.store.run_dir import RunDir
from paretotune.toolchain.ptxas import Ptxas

GPU_STARTUP_S = 180.0  # a GPU actor imports torch/Triton and builds the campaign before its first job


def import_ray(where: str = "campaign") -> Any:
    return require("ray", "ray", f"{where}: execution.backend: 'ray'", instead="use backend: local")


# -- connecting -----------------------------------------------------------------------------------------------
@dataclass
class RaySession:
    """Our connection to Ray: ``owned`` if we called ``ray.init`` (so we undo it), ``started`` if that started
    a new local instance (then ``ray.shutdown`` stops it; otherwise it only disconnects this driver)."""

    owned: bool
    started: bool
    address: str

    def close(self) -> None:
        ray = import_ray()
        if self.owned and ray.is_initialized():
            ray.shutdown()
        self.owned = False


def connect_ray(address: str, *, local_cpus: int, local_gpus: int | None = None,
                where: str = "campaign") -> RaySession:
    """Join or start Ray. ``auto``: ``RAY_ADDRESS`` or a running local cluster, else a new local instance;
    ``local``: always a new local instance; anything else (``host:port``, ``ray://host:port``): that cluster.
    ``local_gpus`` declares GPUs for a local instance (default: Ray detects them); ``where`` names the
    campaign file in error messages."""
    ray = import_ray(where)
    if ray.is_initialized():  # the caller (a notebook, a test) already connected: use it, leave it alone
        return RaySession(owned=False, started=False, address="existing")
    quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    target = (os.environ.get("RAY_ADDRESS") or "auto") if address == "auto" else address
    if target == "auto":
        found = _running_cluster()
        target = "local" if found is None or (found != "auto" and not _reachable(found)) else found
    try:
        if target == "local":
            ray.init(num_cpus=local_cpus, num_gpus=local_gpus, include_dashboard=False, **quiet)
            return RaySession(owned=True, started=True, address="local")
        if target != "auto" and not _reachable(target):  # ray.init would retry for minutes
            raise ConnectionError("nothing answers there")
        ray.init(address=target, **quiet)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise UserError(f"{where}: execution.address: cannot {'start' if target == 'local' else 'connect to'} "
                        f"Ray at '{target}' ({text}); check 'ray status', or use address: local") from None
    return RaySession(owned=True, started=False, address=target)


def _running_cluster() -> str | None:
    """The cluster ``ray.init(address="auto")`` would join, or None; "auto" if this Ray hides how it finds it."""
    try:
        from ray._private.services import get_ray_address_from_environment
    except ImportError:
        return "auto"
    try:
        return str(get_ray_address_from_environment("auto", None))
    except ConnectionError:
        return None


def _reachable(address: str, timeout_s: float = 5.0) -> bool:
    """Whether ``[ray://]host:port`` accepts a TCP connection (a stale or mistyped address fails fast)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return True  # not host:port: let Ray parse it and explain
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False


# -- one call in flight per actor, with deadlines and restarts -------------------------------------------------
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


def _worker_info() -> dict[str, Any]:
    import ray

    return {"node": ray.util.get_node_ip_address(), "pid": os.getpid(),  # type: ignore[no-untyped-call]
            "gpu_ids": [str(g) for g in ray.get_gpu_ids()]}


def _node_local(ctx: WorkerContext) -> WorkerContext:
    """The same context with paths that exist on this node: a private ACF folder and this node's ptxas."""
    if not Path(ctx.acf_dir).is_dir():
        ctx = replace(ctx, acf_dir=tempfile.mkdtemp(prefix="paretotune-acf-"))
    if not Path(ctx.ptxas_path).is_file():
        from paretotune.toolchain.ptxas import find_ptxas

        found = find_ptxas()
        if found.version != ctx.ptxas_version:
            raise RuntimeError(f"this node's ptxas is {found.version}, the campaign uses {ctx.ptxas_version}")
        ctx = replace(ctx, ptxas_path=str(found.path))
    return ctx


def _ensure_file(path: Path, data: bytes | None) -> None:
    if data is not None and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)


# -- CPU actors: the static job ----------------------------------------------------------------------------------
class CpuHost:
    """Ray actor body: ``initializer(ctx)`` once, then ``job(candidate)`` per call, like a local pool worker."""

    def __init__(self, job: Callable[[Candidate], TrialRecord], initializer: Callable[..., None],
                 ctx: WorkerContext) -> None:
        self.job, self.ctx = job, _node_local(ctx)
        initializer(self.ctx)

    def ready(self) -> dict[str, Any]:
        return _worker_info()

    def run(self, candidate: Candidate, acf: bytes | None,
            job: Callable[[Candidate], TrialRecord] | None = None) -> TrialRecord:
        """Run ``job`` (default: the one given at start) on the candidate; the caller may change the job
        between calls (the ptxas limit follows the baseline, see ``static_job.job_after_baseline``)."""
        if candidate.acf:
            _ensure_file(Path(self.ctx.acf_dir) / f"{candidate.acf}.acf", acf)
        return (job or self.job)(candidate)


class RayStaticPool:
    """A drop-in for :class:`WorkerPool` (same job, initializer, context and timeout) on Ray CPU actors."""

    def __init__(self, ray: Any, local: WorkerPool) -> None:
        ctx = replace(local.initargs[0], acf_dir=str(Path(local.initargs[0].acf_dir).resolve()))  # actors' cwd differs
        self.ctx, self.ray, self.timeout_s, self.acf_dir = ctx, ray, local.timeout_s, Path(ctx.acf_dir)
        self.job = local.job  # sent with every call, so setting it takes effect at once, as on the local pool
        cpus = int(ray.cluster_resources().get("CPU", 1))
        actor = ray.remote(CpuHost).options(num_cpus=1, max_restarts=0, max_concurrency=1)
        self.actors = ActorSet(ray, lambda: actor.remote(local.job, local.initializer, ctx),
                               min(local.workers, max(1, cpus)), STARTUP_GRACE_S)
        self._candidates: dict[int, Candidate] = {}
        self._retried: set[int] = set()

    def submit(self, candidates: Sequence[Candidate]) -> None:
        for cand in candidates:
            self._candidates[cand.candidate_id] = cand
            acf = (self.acf_dir / f"{cand.acf}.acf").read_bytes() if cand.acf else None
            self.actors.submit(cand.candidate_id, "run", (cand, acf, self.job), self.timeout_s)

    def record(self, o: Outcome) -> TrialRecord | None:
        """The outcome as the local pool would record it; None if the candidate was queued again."""
        cand = self._candidates[o.key]
        if o.kind == "died" and o.preempted and o.key not in self._retried:
            self._retried.add(o.key)  # its node went away: not the candidate's fault, try once more
            self.submit([cand])
            return None
        del self._candidates[o.key]
        if o.kind == "ok":
            rec: TrialRecord = o.value
            return rec
        return failed_record(cand, {
            "timeout": f"timed out after {self.timeout_s:.0f} s",
            "no-start": f"worker did not start within {self.actors.startup_s:.0f} s",
            "died": f"worker process crashed ({o.detail})",
        }.get(o.kind, f"worker error: {o.detail}"))

    def run(self, candidates: Sequence[Candidate]) -> Iterator[TrialRecord]:
        """Yield one record per candidate as each finishes (order not kept), like ``WorkerPool.run``."""
        self.submit(candidates)
        for _, outcome in drain(self.ray, [self.actors]):
            rec = self.record(outcome)
            if rec is not None:
                yield rec

    def close(self) -> None:
        self.actors.close()


class RayStaticEvaluator(StaticEvaluator):
    """:class:`StaticEvaluator` with its pool on Ray CPU actors."""

    def __init__(self, campaign: Campaign, ptxas: Ptxas, run: RunDir) -> None:
        super().__init__(campaign, ptxas, run)
        ex = campaign.spec.execution
        self.session = connect_ray(ex.address, local_cpus=campaign.spec.evaluation.workers, where=str(campaign.path))
        try:
            self.pool = RayStaticPool(import_ray(), self.pool)  # type: ignore[assignment]
        except BaseException:
            self.session.close()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.session.close()


def ray_evaluator(campaign: Campaign, ptxas: Ptxas, run: RunDir, objectives: Sequence[Objective]) -> Any:
    """The Ray counterpart of ``evaluator_for``: static-only campaigns need no GPU actors."""
    if {o.stage for o in objectives} <= {"static"}:
        return RayStaticEvaluator(campaign, ptxas, run)
    from paretotune.execution.ray_gpu import RayGpuEvaluator

    return RayGpuEvaluator(campaign, ptxas, run, objectives)
