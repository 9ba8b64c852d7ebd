"""The Ray backend on a real local Ray instance (2 CPUs, no dashboard, quiet): the CPU quickstart gives the same
records and the same ranked front as the local backend, and crashes, hangs and CUDA errors are failed records.

Why the equivalence test replays candidates instead of comparing two seeded runs: CompileIQ takes no seed, so
two runs of the same campaign propose different candidates and their fronts differ whatever the backend. The
backend's job is to evaluate a given candidate exactly as the local pool does, so the test runs the quickstart
(smaller budget) with the local backend, then runs it again through the normal campaign loop with the Ray
backend and an engine that proposes exactly the local run's candidates (same configs, same ACF bytes, same
generations, hence the same candidate ids). Static objectives are deterministic (ptxas register allocation),
so every value must match exactly, and so must the ranked fronts (``pareto.rank_fronts``).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
import torch
import yaml

import paretotune.build.pool as local_pool
from paretotune.campaign.load import load_campaign
from paretotune.campaign.resolve import make_objectives
from paretotune.errors import UserError
from paretotune.measure.evaluators import GpuEvaluator, StaticEvaluator
from paretotune.cluster.build_pool import RayBuildPool
from paretotune.cluster.session import RaySession, connect_ray
from paretotune.runner.evaluator import evaluator_for
from paretotune.pareto import rank_fronts
from paretotune.records import Candidate, TrialRecord
from paretotune.runner.loop import run_campaign
from paretotune.runner.start import start_run
from paretotune.search.base import Proposal
from paretotune.store.run_dir import read_results
from paretotune.store.run_dir import RunDir
from paretotune.toolchain.ptxas import Ptxas, export_for_triton, find_ptxas

from . import ray_fault_kernels as fk

HERE = Path(__file__).resolve().parent
QUICKSTART = HERE.parents[1] / "configs" / "quickstart.yaml"
HAS_CUDA = torch.cuda.is_available()


def test_unreachable_cluster_address_is_a_one_line_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """First in the file: it needs Ray not yet connected (the module's instance starts with the next test)."""
    assert not ray.is_initialized()
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    for address in ("127.0.0.1:1", "ray://127.0.0.1:1"):  # port 1: refused at once, where ray.init retries
        with pytest.raises(UserError, match=rf"^c.yaml: execution.address: cannot connect to Ray at '{address}'"):
            connect_ray(address, local_cpus=1, where="c.yaml")
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")  # honored by address: auto (no silent local fallback)
    with pytest.raises(UserError, match="'127.0.0.1:1'"):
        connect_ray("auto", local_cpus=1, where="c.yaml")
    assert not ray.is_initialized()


@pytest.fixture(scope="module")
def ray_session() -> Iterator[RaySession]:
    """A real local Ray instance started the way ``address: auto`` starts one when no cluster runs (falls back
    to ``local`` if someone else's instance is running on this machine, so the test never joins it)."""
    saved = os.environ.pop("RAY_ADDRESS", None)
    others = bool(ray._private.services.find_gcs_addresses())
    session = connect_ray("local" if others else "auto", local_cpus=2, local_gpus=None if HAS_CUDA else 2)
    try:
        assert session.started and session.owned
        assert ray.cluster_resources()["CPU"] == 2
        yield session
    finally:
        session.close()
        if saved is not None:
            os.environ["RAY_ADDRESS"] = saved
    assert not ray.is_initialized()


@pytest.fixture(scope="module")
def ptxas() -> Ptxas:
    found = find_ptxas()
    export_for_triton(found)
    return found


def _quickstart(tmp_path: Path, name: str, backend: str) -> Path:
    data = yaml.safe_load(QUICKSTART.read_text())
    data["search"].update(generations=2, pool_size=9)  # 9: CompileIQ's minimum for 3 objectives
    data["execution"] = {"backend": backend}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


class ReplayEngine:
    """Proposes exactly the candidates a finished run evaluated, generation by generation; learns nothing."""

    def __init__(self, run: RunDir) -> None:
        recs = sorted((r for r in run.records() if not r.is_baseline), key=lambda r: r.candidate_id)
        self.batches = [[Proposal(engine_id=str(r.candidate_id), config=r.config,
                                  acf=run.acf_path(r.acf).read_bytes() if r.acf else None)
                         for r in recs if r.generation == g] for g in sorted({r.generation for r in recs})]

    def ask(self) -> list[Proposal]:
        return self.batches.pop(0) if self.batches else []

    def tell(self, scores: dict[str, Any]) -> None:
        pass

    def save(self, path: str) -> bool:
        return False


def test_already_connected_session_is_reused_and_left_running(ray_session: RaySession) -> None:
    nested = connect_ray("auto", local_cpus=8)
    assert not nested.owned and not nested.started
    nested.close()
    assert ray.is_initialized() and ray.cluster_resources()["CPU"] == 2


def test_quickstart_on_ray_matches_local_backend(ray_session: RaySession, ptxas: Ptxas, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    local = load_campaign(_quickstart(tmp_path, "local", "local"))
    run_l = start_run(local, tmp_path / "local", ptxas, local.spec.seed)
    run_campaign(local, run_l, ptxas)

    def no_local_pool(*_: Any, **__: Any) -> Any:
        raise AssertionError("the ray backend must not use the local process pool")

    monkeypatch.setattr(local_pool.WorkerPool, "run", no_local_pool)  # only this process; Ray actors are others
    remote = load_campaign(_quickstart(tmp_path, "ray", "ray"))
    run_r = start_run(remote, tmp_path / "ray", ptxas, remote.spec.seed)
    run_campaign(remote, run_r, ptxas, engine=ReplayEngine(run_l))

    recs_l, recs_r = (sorted(r.records(), key=lambda rec: rec.candidate_id) for r in (run_l, run_r))  # finish order
    searched = [r for r in recs_l if "twin_of" not in r.extra]  # no-ACF twins of front 0 come after the budget
    assert len(searched) == 19 and [r.candidate_id for r in recs_r] == [r.candidate_id for r in recs_l]
    assert sum(r.status == "ok" and r.acf is not None for r in recs_l) >= 9  # real ACF candidates were compared
    for a, b in zip(recs_l, recs_r, strict=True):
        assert (a.config, a.acf, a.generation, a.is_baseline) == (b.config, b.acf, b.generation, b.is_baseline)
        assert (a.status, a.error, a.values, a.extra) == (b.status, b.error, b.values, b.extra), a.candidate_id
    front_l = rank_fronts(read_results(run_l.path), run_l.directions())
    front_r = rank_fronts(read_results(run_r.path), run_r.directions())
    cols = ["candidate_id", "front", "crowding", *run_l.directions()]
    assert front_l.n_fronts >= 1 and len(front_l.front(0)) >= 1
    assert front_l.ranked[cols].reset_index(drop=True).equals(front_r.ranked[cols].reset_index(drop=True))


def _fault_campaign(tmp_path: Path, objectives: str, extra: str = "") -> Path:
    path = tmp_path / "fault.yaml"
    path.write_text(f"""
name: ray-faults
kernel: {{source: "{HERE / 'ray_fault_kernels.py'}:fault_scale"}}
shapes: [{{name: n4k, N: 4096}}]
objectives: {objectives}
acf: {{search_space: none}}
search: {{engine: random, generations: 1, pool_size: 6}}
evaluation: {{workers: 2, compile_timeout_s: 5, measure_timeout_s: 4, warmup_ms: 1, rep_ms: 2{extra}}}
execution: {{backend: ray}}
""")
    return path


def _cands(faults: list[int], start: int = 0) -> list[Candidate]:
    return [Candidate(candidate_id=start + i, generation=1, config={"BLOCK": 1024, "FAULT": f, "num_warps": 4})
            for i, f in enumerate(faults)]


def test_static_worker_crash_and_hang_are_failed_records(ray_session: RaySession, ptxas: Ptxas,
                                                         tmp_path: Path) -> None:
    campaign = load_campaign(_fault_campaign(tmp_path, "[registers, spill_bytes]"))
    run = start_run(campaign, tmp_path / "run", ptxas, 0)
    ev = evaluator_for(campaign, ptxas, run, make_objectives(campaign))
    assert isinstance(ev, StaticEvaluator) and isinstance(ev.pool, RayBuildPool)
    assert not ev.accepts_feed  # the Ray pool takes whole batches: the loop runs one generation at a time
    ev.pool.timeout_s = 6.0  # the campaign's formula gives 35 s; a hang needs only to pass its deadline
    try:
        recs = {r.candidate_id: r for r in ev.evaluate(_cands([fk.NONE, fk.STATIC_CRASH, fk.STATIC_HANG, fk.NONE]))}
        assert sorted(recs) == [0, 1, 2, 3]
        assert recs[0].status == recs[3].status == "ok" and recs[0].values["registers"] > 0
        assert recs[1].status == "failed" and recs[1].error.startswith("worker process crashed"), recs[1].error
        assert recs[2].status == "failed" and recs[2].error == "timed out after 6 s", recs[2].error
        assert ev.pool.actors.restarts >= 2  # the crashed and the hung actor were replaced
        again = ev.evaluate(_cands([fk.NONE, fk.NONE], start=4))  # the pool carries on with fresh actors
        assert [r.status for r in again] == ["ok", "ok"] and again[0].values == recs[0].values
    finally:
        ev.close()
    assert ray.is_initialized()  # the evaluator joined the fixture's instance; it must not shut it down


@pytest.mark.skipif(HAS_CUDA, reason="drives GPU actors on declared (fake) GPUs; the gpu test covers real ones")
def test_gpu_actors_spread_and_restart_after_crash_hang_and_cuda_error(ray_session: RaySession, ptxas: Ptxas,
                                                                       tmp_path: Path) -> None:
    from paretotune.cluster.measurer import RayGpuMeasurer

    campaign = load_campaign(_fault_campaign(tmp_path, "[runtime]"))
    run = start_run(campaign, tmp_path / "run", ptxas, 0)
    ev = evaluator_for(campaign, ptxas, run, make_objectives(campaign))
    assert isinstance(ev, GpuEvaluator) and isinstance(ev.measurer, RayGpuMeasurer)
    assert len(ev.measurer.fleet.slots) == 2 and not ev.accepts_feed  # one actor per (declared) GPU
    try:
        faults = [fk.NONE, fk.GPU_CRASH, fk.GPU_HANG, fk.GPU_CUDA_ERROR]
        recs: dict[int, TrialRecord] = {r.candidate_id: r for r in ev.evaluate(_cands(faults))}
    finally:
        ev.close()
    assert sorted(recs) == [0, 1, 2, 3] and all(r.status == "failed" for r in recs.values())
    assert recs[1].error.startswith("GPU worker died"), recs[1].error
    assert recs[2].error == "GPU measurement timed out after 4 s", recs[2].error
    assert "CUDA error: an illegal memory access" in recs[3].error, recs[3].error
    # no CUDA here: the launch itself fails, reported by the measurement code (not a crash or a timeout)
    assert "died" not in recs[0].error and "timed out" not in recs[0].error and recs[0].error, recs[0].error
    assert ev.measurer.fleet.restarts >= 3  # crash, hang and CUDA error each replaced their actor
    workers = [r.extra["ray"] for r in recs.values()]
    assert {w["gpu_worker"] for w in workers} == {0, 1}  # the batch was spread over both GPU actors
    assert all(w["gpu_ids"] for w in workers if w.get("pid"))  # Ray pinned each started actor to a GPU
    assert all(r.measure_s > 0 for r in recs.values())


@pytest.mark.gpu
def test_runtime_campaign_on_ray_uses_every_gpu(ray_session: RaySession, tmp_path: Path) -> None:
    from paretotune.cli import main as cli

    cfg = tmp_path / "gpu.yaml"
    cfg.write_text(f"""
name: ray-gpu
kernel: {{source: "{HERE.parent / 'gpu' / 'faulty_kernels.py'}:faulty_scale"}}
shapes: [{{name: n1m, N: 1048576}}]
objectives: [runtime]
acf: {{search_space: none}}
search: {{engine: random, generations: 2, pool_size: 6}}
evaluation: {{workers: 2, warmup_ms: 2, rep_ms: 5}}
execution: {{backend: ray}}
""")
    assert cli(["run", str(cfg), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    recs = RunDir(tmp_path / "run").records()
    assert len(recs) == 13
    for r in recs:
        bug = r.config["BUG"]
        assert (r.status == "ok") == (bug == 0), (r.config, r.error)
    used = {r.extra["ray"]["gpu_worker"] for r in recs if "ray" in r.extra}
    assert len(used) == min(torch.cuda.device_count(), 2)
