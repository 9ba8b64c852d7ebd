"""GPU evaluation on Ray: CPU actors build, one actor per GPU measures, candidates spread over all GPUs.

Each GPU actor (``num_gpus = execution.gpus_per_worker``; Ray sets its ``CUDA_VISIBLE_DEVICES``, so its GPU is
``cuda:0``) runs the local GPU worker's :func:`serve` loop in a thread, fed through queues instead of a pipe:
the per-candidate logic (correctness gate, timing next to the baseline, CUDA-error detection) is exactly the
local backend's. The actor is killed and re-created after a fatal CUDA error, a timeout or a crash. A
candidate goes to the first free GPU as soon as its static stage is done, so compiles and measurements overlap
on all GPUs. ncu batches run per GPU too, each on the GPU that measured its candidates.
"""
from __future__ import annotations

import queue
import threading
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from paretotune.campaign.load import Campaign
from paretotune.errors import UserError
from paretotune.execution.gpu import GpuEvaluator, input_seed
from paretotune.execution.gpu_worker import GpuJob, serve
from paretotune.execution.ray_backend import (
    GPU_STARTUP_S,
    ActorSet,
    Outcome,
    RayStaticPool,
    _ensure_file,
    _node_local,
    _worker_info,
    connect_ray,
    drain,
    import_ray,
)
from paretotune.execution.static_job import WorkerContext, job_after_baseline
from paretotune.objectives.base import Objective
from paretotune.records import Candidate, TrialRecord
from paretotune.store.run_dir import RunDir
from paretotune.toolchain.ptxas import Ptxas


class _QueueConn:
    """The two ends of a ``multiprocessing`` pipe that :func:`serve` uses, over in-process queues."""

    def __init__(self, inbox: queue.Queue[Any], outbox: queue.Queue[Any]) -> None:
        self.inbox, self.outbox = inbox, outbox

    def send(self, obj: Any) -> None:
        self.outbox.put(obj)

    def recv(self) -> Any:
        return self.inbox.get()


class GpuHost:
    """Ray actor body around :func:`serve`. ``measure`` returns what ``serve`` would send over its pipe."""

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = _node_local(ctx)
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
            serve(_QueueConn(self._inbox, self._outbox), c.campaign_path, c.campaign_text, c.ptxas_path,
                  c.ptxas_version)
        except BaseException as exc:  # noqa: BLE001 - reported as the pending job's (fatal) failure
            self._outbox.put(("error", {"error": f"GPU worker stopped: {type(exc).__name__}: {exc}".strip(),
                                        "fatal": True, "traceback": traceback.format_exc(limit=4)}))

    def ready(self) -> dict[str, Any]:
        return _worker_info()

    def measure(self, job: GpuJob, acf: bytes | None) -> tuple[str, Any]:
        if job.acf_path and not Path(job.acf_path).exists():  # another node: use a private copy of the ACF
            local = Path(self.ctx.acf_dir) / Path(job.acf_path).name
            _ensure_file(local, acf)
            job = replace(job, acf_path=str(local))
        if not self._thread.is_alive():
            return "error", {"error": "GPU worker stopped after an earlier fatal error", "fatal": True}
        self._inbox.put(job)
        reply: tuple[str, Any] = self._outbox.get()
        return reply

    def ncu(self, run_path: str, records: list[TrialRecord], metrics: list[str]) -> dict[int, Any]:
        from paretotune.campaign.load import campaign_from_text
        from paretotune.execution.ncu_batch import measure_batch

        campaign = campaign_from_text(self.ctx.campaign_text, Path(self.ctx.campaign_path))
        return measure_batch(campaign, RunDir(run_path), records, metrics)


class RayGpuEvaluator(GpuEvaluator):
    """:class:`GpuEvaluator` with its CPU pool on Ray actors and one measurement actor per GPU of the cluster."""

    def __init__(self, campaign: Campaign, ptxas: Ptxas, run: RunDir, objectives: Sequence[Objective]) -> None:
        super().__init__(campaign, ptxas, run, objectives)  # builds the local pool/worker lazily: nothing starts
        ev, ex = campaign.spec.evaluation, campaign.spec.execution
        if ev.device not in ("cuda", "cuda:0"):
            raise UserError(f"{campaign.path}: evaluation.device: with execution.backend ray each measurement actor "
                            f"sees only its own GPU, as cuda:0; set device: cuda:0 (got '{ev.device}')")
        self.session = connect_ray(ex.address, local_cpus=ev.workers, where=str(campaign.path))
        try:
            ray = import_ray()
            gpus = float(ray.cluster_resources().get("GPU", 0.0))
            n = int(gpus / ex.gpus_per_worker + 1e-9)
            if n < 1:
                raise UserError(f"{campaign.path}: execution: the Ray cluster has {gpus:g} GPU(s), fewer than "
                                f"gpus_per_worker={ex.gpus_per_worker:g}; runtime/ncu objectives need a GPU")
            self.cpu = RayStaticPool(ray, self.pool)
            ctx: WorkerContext = self.cpu.ctx
            self.pool = self.cpu  # type: ignore[assignment] # same run()/close(), for any inherited use
            host = ray.remote(GpuHost).options(num_gpus=ex.gpus_per_worker, num_cpus=0, max_restarts=0,
                                               max_concurrency=1)
            self.fleet = ActorSet(ray, lambda: host.remote(ctx), n, GPU_STARTUP_S)
        except BaseException:
            self.session.close()
            raise
        self.measure_timeout_s = ev.measure_timeout_s * len(campaign.shapes)
        self._measured_on: dict[int, int] = {}

    def _job(self, cand: Candidate) -> tuple[GpuJob, bytes | None]:
        acf = self.run.acf_path(cand.acf).resolve() if cand.acf else None  # the path the CPU actor precompiled
        job = GpuJob(cand.candidate_id, cand.config, str(acf) if acf else None,
                     input_seed(self.campaign.spec.seed, cand.candidate_id))
        return job, acf.read_bytes() if acf else None

    def _gpu_result(self, o: Outcome) -> tuple[str, Any]:
        """('ok', per-shape dict) | ('failed', reason), worded like the local ``GpuWorker.run``."""
        if o.kind == "ok":
            status, payload = o.value
            if status == "error":
                if payload.get("fatal"):
                    self.fleet.restart(o.slot)  # its CUDA context is poisoned
                return "failed", payload["error"]
            return ("failed", payload["failed"]) if "failed" in payload else ("ok", payload)
        return "failed", {"timeout": f"GPU measurement timed out after {self.measure_timeout_s:.0f} s",
                          "no-start": f"GPU worker did not start within {GPU_STARTUP_S:.0f} s",
                          "died": f"GPU worker died ({o.detail})"}.get(o.kind, f"GPU worker error: {o.detail}")

    def evaluate(self, candidates: Sequence[Candidate]) -> list[TrialRecord]:
        return list(self.stream(candidates))

    def stream(self, candidates: Sequence[Candidate]) -> Iterator[TrialRecord]:
        """Records as each candidate finishes (with ncu objectives: measured ones after their ncu batches)."""
        by_id = {c.candidate_id: c for c in candidates}
        needs_ncu = any(o.required_ncu_metrics for o in self.objectives)
        measured: list[tuple[TrialRecord, dict[str, Any]]] = []
        static_ok: dict[int, TrialRecord] = {}
        self.fleet.warm()
        self.cpu.submit(candidates)
        for which, o in drain(import_ray(), [self.cpu.actors, self.fleet]):
            if which == 0:  # a static result: failed ones are final, ok ones go to the first free GPU
                rec = self.cpu.record(o)
                if rec is None:
                    continue
                if rec.is_baseline:
                    self.cpu.job = job_after_baseline(rec, self.campaign.spec.evaluation)
                if rec.status != "ok":
                    yield rec
                    continue
                static_ok[rec.candidate_id] = rec
                self.fleet.submit(rec.candidate_id, "measure", self._job(by_id[rec.candidate_id]),
                                  self.measure_timeout_s)
                continue
            rec = static_ok.pop(o.key)
            rec = replace(rec, measure_s=o.elapsed_s, extra={**rec.extra, "ray": {"gpu_worker": o.slot, **o.worker}})
            status, payload = self._gpu_result(o)
            if status != "ok":
                yield replace(rec, status="failed", error=payload)
            elif needs_ncu:
                self._measured_on[rec.candidate_id] = o.slot
                measured.append((rec, payload))
            else:
                yield self._finish(rec, payload, {})
        ncu = self._ncu([r for r, _ in measured])
        for rec, per_shape in measured:
            yield self._finish(rec, per_shape, ncu.get(rec.candidate_id, {}))

    def _ncu(self, records: list[TrialRecord]) -> dict[int, dict[str, dict[str, float]]]:
        """One ncu batch per GPU, over the candidates that GPU measured (its Triton cache is warm for them).
        A batch that fails leaves its candidates without ncu values, which ``_finish`` records as failed."""
        metrics = sorted({m for o in self.objectives for m in o.required_ncu_metrics})
        if not metrics or not records:
            return {}
        groups: dict[int, list[TrialRecord]] = {}
        for rec in records:
            groups.setdefault(self._measured_on.get(rec.candidate_id, 0), []).append(rec)
        for slot, recs in groups.items():
            self.fleet.submit(("ncu", slot), "ncu", (str(self.run.path), recs, metrics),
                              120.0 + 4 * self.measure_timeout_s * len(recs), slot=slot)
        out: dict[int, dict[str, dict[str, float]]] = {}
        for _, o in drain(import_ray(), [self.fleet]):
            if o.kind == "ok":
                out.update(o.value)
        return out

    def close(self) -> None:
        try:
            self.cpu.close()
            self.fleet.close()
        finally:
            self.session.close()
