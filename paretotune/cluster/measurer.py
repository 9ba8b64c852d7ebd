"""The Ray backend's measurer: one actor per GPU of the cluster (:class:`~.hosts.GpuHost`), fed as builds end.

A candidate goes to the first free GPU as soon as its static stage is done, so compiles and measurements
overlap on all GPUs: one ``ray.wait`` covers the build pool's CPU actors and the GPU actors. The actor is
killed and re-created after a fatal CUDA error, a timeout or a crash. ncu batches run per GPU too, each on
the GPU that measured its candidates.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from paretotune.errors import UserError
from paretotune.measure.arms import input_seed
from paretotune.build.base import (BuildPool, Built, Feed, Measured, baseline_s_per_shape,
                                       measure_time_limit)
from paretotune.measure.gpu_worker import GpuJob
from paretotune.measure.requests import MeasureRequest
from paretotune.cluster.actors import ActorSet, Outcome, drain
from paretotune.cluster.build_pool import RayBuildPool
from paretotune.cluster.hosts import GpuHost
from paretotune.records import Candidate, TrialRecord
from paretotune.store.run_dir import RunDir

GPU_STARTUP_S = 180.0  # a GPU actor imports torch/Triton and builds the campaign before its first job


def check_device(request: MeasureRequest) -> None:
    """Each measurement actor sees only its own GPU, as cuda:0: another device cannot be honoured."""
    device = request.evaluation.device
    if device not in ("cuda", "cuda:0"):
        raise UserError(f"{request.campaign_path}: evaluation.device: with execution.backend ray each measurement "
                        f"actor sees only its own GPU, as cuda:0; set device: cuda:0 (got '{device}')")


def gpu_actor_count(ray: Any, request: MeasureRequest) -> int:
    """How many measurement actors the cluster's GPUs hold (``gpus_per_worker`` each); at least one."""
    per_actor = request.gpus_per_worker
    gpus = float(ray.cluster_resources().get("GPU", 0.0))
    n = int(gpus / per_actor + 1e-9)
    if n < 1:
        raise UserError(f"{request.campaign_path}: execution: the Ray cluster has {gpus:g} GPU(s), fewer than "
                        f"gpus_per_worker={per_actor:g}; runtime/ncu objectives need a GPU")
    return n


class RayGpuMeasurer:
    """``n_gpus`` measurement actors (``gpus_per_worker`` GPUs each) next to ``cpu``, the build pool they take
    their candidates from."""

    def __init__(self, ray: Any, request: MeasureRequest, run: RunDir, cpu: RayBuildPool, n_gpus: int,
                 baseline: TrialRecord | None = None) -> None:
        self.ray, self.request, self.run, self.cpu = ray, request, run, cpu
        ctx = cpu.ctx
        host = ray.remote(GpuHost).options(num_gpus=request.gpus_per_worker, num_cpus=0,
                                           max_restarts=0, max_concurrency=1)
        self.fleet = ActorSet(ray, lambda: host.remote(ctx, request), n_gpus, GPU_STARTUP_S)
        self.measure_timeout_s = request.evaluation.measure_timeout_s * len(request.shapes)
        self.candidate_timeout_s = self._candidate_limit(baseline)  # a resumed run's stored baseline counts
        self._built: dict[int, TrialRecord] = {}  # submitted, not yet measured
        self._measured_on: dict[int, int] = {}

    def events(self, pool: BuildPool, candidates: Sequence[Candidate] | Feed) -> Iterator[Built | Measured]:
        if pool is not self.cpu or isinstance(candidates, Feed):
            raise TypeError("Ray GPU actors measure a batch built by their own Ray build pool")
        self.fleet.warm()
        self.cpu.submit(candidates)
        for which, o in drain(self.ray, [self.cpu.actors, self.fleet]):
            if which == 0:  # a static result
                rec = self.cpu.record(o)
                if rec is not None:
                    yield Built(rec)
                continue
            rec = self._built.pop(o.key)
            self._measured_on[rec.candidate_id] = o.slot
            rec = replace(rec, measure_s=o.elapsed_s, extra={**rec.extra, "ray": {"gpu_worker": o.slot, **o.worker}})
            status, payload = self._gpu_result(o)
            if rec.is_baseline and status == "ok":  # search candidates get a limit scaled to the baseline's time
                self.candidate_timeout_s = self._candidate_limit(rec)
            yield Measured(rec, status, payload)

    def _candidate_limit(self, baseline: TrialRecord | None) -> float:
        """All shapes' seconds (an actor call measures every shape): :func:`measure_time_limit` per shape."""
        n = len(self.request.shapes)
        return n * measure_time_limit(self.request.evaluation, baseline_s_per_shape(baseline, n))

    def start(self) -> None:
        """Nothing ahead: the Ray backend is never started before the campaign's checks (see runner/session)."""

    def submit(self, record: TrialRecord) -> None:
        """Queue the built candidate for the first free GPU actor."""
        self._built[record.candidate_id] = record
        self.fleet.submit(record.candidate_id, "measure", self._job(record),
                          self.measure_timeout_s if record.is_baseline else self.candidate_timeout_s)

    def _job(self, rec: TrialRecord) -> tuple[GpuJob, bytes | None]:
        acf = self.run.acf_path(rec.acf).resolve() if rec.acf else None  # the path the CPU actor precompiled
        job = GpuJob(rec.candidate_id, rec.config, str(acf) if acf else None,
                     input_seed(self.request.seed, rec.candidate_id))
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
        return "failed", {"timeout": f"GPU measurement timed out after {self.candidate_timeout_s:.0f} s",
                          "no-start": f"GPU worker did not start within {GPU_STARTUP_S:.0f} s",
                          "died": f"GPU worker died ({o.detail})"}.get(o.kind, f"GPU worker error: {o.detail}")

    def ncu(self, records: list[TrialRecord], metrics: list[str]) -> dict[int, dict[str, dict[str, float]]]:
        """One ncu batch per GPU, over the candidates that GPU measured (its Triton cache is warm for them).
        A batch that fails leaves its candidates without ncu values."""
        groups: dict[int, list[TrialRecord]] = {}
        for rec in records:
            groups.setdefault(self._measured_on.get(rec.candidate_id, 0), []).append(rec)
        for slot, recs in groups.items():
            self.fleet.submit(("ncu", slot), "ncu", (str(self.run.path), recs, metrics),
                              120.0 + 4 * self.measure_timeout_s * len(recs), slot=slot)
        out: dict[int, dict[str, dict[str, float]]] = {}
        for _, o in drain(self.ray, [self.fleet]):
            if o.kind == "ok":
                out.update(o.value)
        return out

    def close(self) -> None:
        self.fleet.close()
