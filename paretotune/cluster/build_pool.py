"""The Ray backend's build pool: the static job on Ray CPU actors, as :class:`~paretotune.build.pool.WorkerPool`
runs it on local processes (same job, initializer, context and timeout; the same failure wording)."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from paretotune.build.base import Feed, failed_record
from paretotune.build.pool import STARTUP_GRACE_S
from paretotune.cluster.actors import ActorSet, Outcome, drain
from paretotune.cluster.hosts import CpuHost
from paretotune.build.static_job import WorkerContext
from paretotune.records import Candidate, TrialRecord


class RayBuildPool:
    """The build pool on Ray CPU actors: at most ``workers`` (and the cluster's CPUs), one call each at a time."""

    accepts_feed = False  # run() takes a whole batch: the loop evaluates one generation at a time

    def __init__(self, ray: Any, job: Callable[[Candidate], TrialRecord], initializer: Callable[..., None],
                 ctx: WorkerContext, workers: int, timeout_s: float) -> None:
        ctx = replace(ctx, acf_dir=str(Path(ctx.acf_dir).resolve()))  # actors' cwd differs
        self.ctx, self.ray, self.timeout_s, self.acf_dir = ctx, ray, timeout_s, Path(ctx.acf_dir)
        self.job = job  # sent with every call, so setting it takes effect at once, as on the local pool
        cpus = int(ray.cluster_resources().get("CPU", 1))
        actor = ray.remote(CpuHost).options(num_cpus=1, max_restarts=0, max_concurrency=1)
        self.actors = ActorSet(ray, lambda: actor.remote(job, initializer, ctx), min(workers, max(1, cpus)),
                               STARTUP_GRACE_S)
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

    def start(self) -> None:
        """Nothing to do ahead: an actor starts with its first call (:meth:`ActorSet.warm` would start all)."""

    def kernel_checked(self) -> None:
        """Nothing to open: actors start after the campaign's checks."""

    def run(self, candidates: Sequence[Candidate] | Feed) -> Iterator[TrialRecord]:
        """Yield one record per candidate as each finishes (order not kept), like ``WorkerPool.run``."""
        if isinstance(candidates, Feed):
            raise TypeError("the Ray build pool takes a batch of candidates, not a Feed")
        self.submit(candidates)
        for _, outcome in drain(self.ray, [self.actors]):
            rec = self.record(outcome)
            if rec is not None:
                yield rec

    def kill(self) -> None:
        """Ray kills the actors when the session ends (:meth:`close`)."""

    def close(self) -> None:
        self.actors.close()


