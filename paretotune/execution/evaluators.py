"""Pick the evaluator a campaign needs: static (CPU, ptxas only) or GPU (runtime, ncu)."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

from paretotune.campaign.load import Campaign
from paretotune.execution.pool import Feed, WorkerPool
from paretotune.execution.static_job import WorkerContext, init_worker, job_after_baseline
from paretotune.objectives.base import Objective
from paretotune.records import Candidate, TrialRecord
from paretotune.store.run_dir import RunDir
from paretotune.toolchain.ptxas import Ptxas


class StaticEvaluator:
    """Builds each candidate with ptxas in a CPU worker pool and reads the static objectives."""

    def __init__(self, campaign: Campaign, ptxas: Ptxas, run: RunDir) -> None:
        self.evaluation = campaign.spec.evaluation
        ctx = WorkerContext(campaign_path=str(campaign.path), campaign_text=campaign.text,
                            ptxas_path=str(ptxas.path), ptxas_version=ptxas.version, acf_dir=str(run.path / "acf"),
                            compile_timeout_s=self.evaluation.compile_timeout_s)
        timeout = self.evaluation.compile_timeout_s * len(campaign.shapes) + 30.0
        job = job_after_baseline(run.baseline(), self.evaluation)  # a resumed run has its baseline
        self.pool = WorkerPool(job, init_worker, (ctx,), self.evaluation.workers, timeout)

    def evaluate(self, candidates: Sequence[Candidate]) -> list[TrialRecord]:
        return list(self.stream(candidates))

    accepts_feed = True  # stream() takes a Feed: the loop keeps candidates in flight across generations

    def stream(self, candidates: Sequence[Candidate] | Feed) -> Iterator[TrialRecord]:
        """Records as each candidate finishes, so the loop stores each one at once (a crash loses none)."""
        for rec in self.pool.run(candidates):
            if rec.is_baseline:
                self.pool.job = job_after_baseline(rec, self.evaluation)
            yield rec

    def close(self) -> None:
        self.pool.close()


def evaluator_for(campaign: Campaign, ptxas: Ptxas, run: RunDir, objectives: Sequence[Objective]):
    if campaign.spec.execution.backend == "ray":
        from paretotune.execution.ray_backend import ray_evaluator

        return ray_evaluator(campaign, ptxas, run, objectives)
    stages = {o.stage for o in objectives}
    if stages <= {"static"}:
        return StaticEvaluator(campaign, ptxas, run)
    from paretotune.execution.gpu import GpuEvaluator

    return GpuEvaluator(campaign, ptxas, run, objectives)
