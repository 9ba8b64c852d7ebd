"""The bodies of the Ray actors: :class:`CpuHost` runs the static job like a local pool worker, :class:`GpuHost`
runs the local GPU worker's :func:`serve` loop; and what both need to run on any node of the cluster.

Each GPU actor (``num_gpus = execution.gpus_per_worker``; Ray sets its ``CUDA_VISIBLE_DEVICES``, so its GPU is
``cuda:0``) runs :func:`serve` in a thread, fed through queues instead of a pipe: the per-candidate logic
(correctness gate, timing next to the baseline, CUDA-error detection) is exactly the local backend's.
"""
from __future__ import annotations

import os
import queue
import tempfile
import threading
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from paretotune.measure.gpu_worker import GpuJob, serve
from paretotune.measure.ncu_measure import measure_batch
from paretotune.measure.requests import MeasureRequest
from paretotune.build.static_job import WorkerContext
from paretotune.records import Candidate, TrialRecord
from paretotune.store.atomic import atomic_write
from paretotune.store.run_dir import RunDir


def worker_info() -> dict[str, Any]:
    import ray

    return {"node": ray.util.get_node_ip_address(), "pid": os.getpid(),  # type: ignore[no-untyped-call]
            "gpu_ids": [str(g) for g in ray.get_gpu_ids()]}


def node_local(ctx: WorkerContext) -> WorkerContext:
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


def ensure_file(path: Path, data: bytes | None) -> None:
    if data is not None and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)


class CpuHost:
    """Ray actor body: ``initializer(ctx)`` once, then ``job(candidate)`` per call, like a local pool worker."""

    def __init__(self, job: Callable[[Candidate], TrialRecord], initializer: Callable[..., None],
                 ctx: WorkerContext) -> None:
        self.job, self.ctx = job, node_local(ctx)
        initializer(self.ctx)

    def ready(self) -> dict[str, Any]:
        return worker_info()

    def run(self, candidate: Candidate, acf: bytes | None,
            job: Callable[[Candidate], TrialRecord] | None = None) -> TrialRecord:
        """Run ``job`` (default: the one given at start) on the candidate; the caller may change the job
        between calls (the ptxas limit follows the baseline, see ``static_job.job_after_baseline``)."""
        if candidate.acf:
            ensure_file(Path(self.ctx.acf_dir) / f"{candidate.acf}.acf", acf)
        return (job or self.job)(candidate)


class _QueueConn:
    """The two ends of a ``multiprocessing`` pipe that :func:`serve` uses, over in-process queues."""

    def __init__(self, inbox: queue.Queue[Any], outbox: queue.Queue[Any]) -> None:
        self.inbox, self.outbox = inbox, outbox

    def send(self, obj: Any) -> None:
        self.outbox.put(obj)

    def recv(self) -> Any:
        return self.inbox.get()


class GpuHost:
    """Ray actor body around :func:`serve`. ``measure`` returns what ``serve`` would send over its pipe.
    ``ctx``: the build pool's context (this node's ptxas and ACF folder); ``request``: what to measure."""

    def __init__(self, ctx: WorkerContext, request: MeasureRequest) -> None:
        self.ctx, self.request = node_local(ctx), request
        self._inbox: queue.Queue[Any] = queue.Queue()
        self._outbox: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="paretotune-gpu-serve", daemon=True)
        self._thread.start()
        status, detail = self._outbox.get()
        if status != "ready":
            raise RuntimeError(f"GPU worker did not start: {detail['error']}")

    def _serve(self) -> None:
        c = self.ctx
        try:
            serve(_QueueConn(self._inbox, self._outbox), self.request, c.ptxas_path, c.ptxas_version)
        except BaseException as exc:  # noqa: BLE001 - reported as the pending job's (fatal) failure
            self._outbox.put(("error", {"error": f"GPU worker stopped: {type(exc).__name__}: {exc}".strip(),
                                        "fatal": True, "traceback": traceback.format_exc(limit=4)}))

    def ready(self) -> dict[str, Any]:
        return worker_info()

    def measure(self, job: GpuJob, acf: bytes | None) -> tuple[str, Any]:
        if job.acf_path and not Path(job.acf_path).exists():  # another node: use a private copy of the ACF
            local = Path(self.ctx.acf_dir) / Path(job.acf_path).name
            ensure_file(local, acf)
            job = replace(job, acf_path=str(local))
        if not self._thread.is_alive():
            return "error", {"error": "GPU worker stopped after an earlier fatal error", "fatal": True}
        self._inbox.put(job)
        reply: tuple[str, Any] = self._outbox.get()
        while reply[0] == "phase":  # serve announces each phase; a timeout here is the actor set's to handle
            reply = self._outbox.get()
        return reply

    def ncu(self, run_path: str, records: list[TrialRecord], metrics: list[str]) -> dict[int, Any]:
        return measure_batch(self.request.shapes, RunDir(run_path), records, metrics)
