"""The one place that picks an evaluator: which build pool (local processes or Ray CPU actors) and, when an
objective needs the GPU, which measurer (a local GPU process or Ray GPU actors). The evaluators
(:mod:`.evaluators`) never know which parts they were given. The ray package is imported only for
``backend: ray`` (:func:`~paretotune.cluster.session.import_ray`). The parts get the campaign's
:class:`~paretotune.measure.requests.MeasureRequest` (and the build workers its file's path and text), never
the campaign itself.
"""
from __future__ import annotations

from collections.abc import Sequence

from paretotune.campaign.load import Campaign
from paretotune.campaign.trial_import import kernel_mentions_helion
from paretotune.build.base import BuildPool, Evaluator, Measurer, Session
from paretotune.measure.evaluators import GpuEvaluator, StaticEvaluator
from paretotune.measure.gpu import LocalGpuMeasurer
from paretotune.measure.requests import MeasureRequest
from paretotune.build.fork_server import worker_context
from paretotune.build.pool import WorkerPool
from paretotune.cluster.build_pool import RayBuildPool
from paretotune.cluster.measurer import RayGpuMeasurer, check_device, gpu_actor_count
from paretotune.cluster.session import connect_ray, import_ray
from paretotune.build.static_job import WorkerContext, build_limit_s, init_worker, job_after_baseline
from paretotune.objectives.base import Objective
from paretotune.store.run_dir import RunDir
from paretotune.toolchain.ptxas import Ptxas

COMPILE_NICE = 5  # CPU workers compile at a lower priority than the GPU worker and its starting spares


def measure_request(campaign: Campaign) -> MeasureRequest:
    """What the evaluators, measurers and GPU workers read of ``campaign``."""
    return MeasureRequest(campaign_path=str(campaign.path), campaign_text=campaign.text, shapes=campaign.shapes,
                          target=campaign.target, evaluation=campaign.spec.evaluation, seed=campaign.spec.seed,
                          gpus_per_worker=campaign.spec.execution.gpus_per_worker)


def evaluator_for(campaign: Campaign, ptxas: Ptxas, run: RunDir, objectives: Sequence[Objective]) -> Evaluator:
    """Static-only campaigns get a build pool alone; runtime/ncu objectives add a measurer, and then the pool
    also precompiles with each ACF, filling the Triton cache that the measurer's builds hit."""
    measures = not {o.stage for o in objectives} <= {"static"}
    ev = campaign.spec.evaluation
    local = campaign.spec.execution.backend != "ray"
    # workers import the kernel once it passed its trial; a Helion kernel's fork server imports Helion first
    vetted = worker_context(helion=kernel_mentions_helion(campaign)).Event() if local else None
    ctx = WorkerContext(campaign_path=str(campaign.path), campaign_text=campaign.text, ptxas_path=str(ptxas.path),
                        ptxas_version=ptxas.version, acf_dir=str(run.path / "acf"), precompile=measures,
                        compile_timeout_s=ev.compile_timeout_s, kernel_vetted=vetted)
    baseline = run.baseline()  # a resumed run has its baseline: the ptxas and measurement limits follow it
    job = job_after_baseline(baseline, ev)
    timeout_s = build_limit_s(baseline, ev, len(campaign.shapes))
    request = measure_request(campaign)
    if local:
        pool = WorkerPool(job, init_worker, (ctx,), ev.workers, timeout_s, nice=COMPILE_NICE if measures else 0,
                          kernel_vetted=vetted)
        measurer = LocalGpuMeasurer(request, ptxas, run, baseline) if measures else None
        return _compose(request, run, objectives, pool, measurer)
    # Ray: CPU actors build, one actor per GPU of the cluster measures
    if measures:
        check_device(request)
    session = connect_ray(campaign.spec.execution.address, local_cpus=ev.workers, where=str(campaign.path))
    try:
        ray = import_ray()
        n_gpus = gpu_actor_count(ray, request) if measures else 0
        ray_pool = RayBuildPool(ray, job, init_worker, ctx, ev.workers, timeout_s)
        measurer = RayGpuMeasurer(ray, request, run, ray_pool, n_gpus, baseline) if measures else None
        return _compose(request, run, objectives, ray_pool, measurer, session)
    except BaseException:
        session.close()
        raise


def _compose(request: MeasureRequest, run: RunDir, objectives: Sequence[Objective], pool: BuildPool,
             measurer: Measurer | None, session: Session | None = None) -> Evaluator:
    if measurer is None:
        return StaticEvaluator(request, pool, session)
    return GpuEvaluator(request, run, objectives, pool, measurer, session)
