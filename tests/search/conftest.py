"""Fixtures for search tests: real ACFs sampled by CompileIQ, ACF files and a zip pack, and small campaigns.

Campaigns run through the real loop (``run_campaign``), real Triton compiles and real ptxas. Most of them use
an in-process evaluator (the same ``evaluate_static`` the worker pool runs, minus the spawned processes) so
that each campaign costs seconds, not the pool's start-up; ``test_cli_pack_grid`` runs the full path.
"""
from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from paretotune.campaign.load import load_campaign
from paretotune.records import Candidate, TrialRecord
from paretotune.store.run_dir import RunDir
from paretotune.toolchain.acf import AcfStore
from paretotune.toolchain.ptxas import Ptxas, export_for_triton, find_ptxas

SOFTMAX = "paretotune.kernels.bundled.softmax:triton_softmax"  # knobs: num_warps 4/8/16/32, num_stages 1
N_CONFIGS = 4


@pytest.fixture(scope="session")
def ptxas() -> Ptxas:
    found = find_ptxas()
    export_for_triton(found)
    return found


@pytest.fixture(scope="session")
def sampled_acfs() -> list[bytes]:
    """Three distinct ACFs sampled from CompileIQ's PTXAS 13.3 space (as bytes, what the loop stores)."""
    from compileiq.ciq import Search
    from compileiq.search_spaces.compilers import PtxasSearchSpace
    from compileiq.types import SearchConfiguration, WorkerTypes

    search = Search(objective_function=lambda _c: 0.0, search_space=PtxasSearchSpace(version="13.3"),
                    search_config=SearchConfiguration(problem_type="min", pool_size=6, generations=1),
                    worker_type=WorkerTypes.MANUAL)
    out: list[bytes] = []
    while len(out) < 3:
        for h in search.sample(3):
            data = bytes.fromhex(h)
            if data not in out:
                out.append(data)
    return out[:3]


@pytest.fixture
def acf_files(tmp_path: Path, sampled_acfs: list[bytes]) -> list[Path]:
    """The sampled ACFs as ``<sha>.acf`` files with their ``<sha>.json`` version records."""
    store = AcfStore(tmp_path / "acfs")
    return [store.path(store.put(d, ptxas_version="13.3", target="sm_90", source="test").sha256)
            for d in sampled_acfs]


@pytest.fixture
def acf_pack(tmp_path: Path, sampled_acfs: list[bytes]) -> Path:
    """A booster-pack-like zip: the ACFs in a folder, a SHA256SUMS file and a catalog JSON."""
    path = tmp_path / "pack.zip"
    with zipfile.ZipFile(path, "w") as pack:
        sums = []
        for i, data in enumerate(sampled_acfs):
            pack.writestr(f"softmax-pack/acf_{i}.acf", data)
            sums.append(f"{hashlib.sha256(data).hexdigest()}  acf_{i}.acf")
        pack.writestr("softmax-pack/SHA256SUMS", "\n".join(sums) + "\n")
        pack.writestr("softmax-pack/catalog.json", json.dumps({"kernel": "softmax", "count": len(sampled_acfs)}))
    return path


class InProcessEvaluator:
    """``evaluate_static`` in this process: the worker's code path without the spawned pool."""

    accepts_feed = False  # one generation at a time
    measures_on_gpu = False

    def __init__(self, campaign, ptxas: Ptxas, run: RunDir) -> None:
        from paretotune.build.static_job import WorkerContext, init_worker

        init_worker(WorkerContext(campaign_path=str(campaign.path), campaign_text=campaign.text,
                                  ptxas_path=str(ptxas.path), ptxas_version=ptxas.version,
                                  acf_dir=str(run.path / "acf")))

    def evaluate(self, candidates: Sequence[Candidate]) -> list[TrialRecord]:
        return list(self.stream(candidates))

    def stream(self, candidates: Sequence[Candidate]) -> Iterator[TrialRecord]:
        from paretotune.build.static_job import evaluate_static

        return (evaluate_static(c) for c in candidates)

    def close(self) -> None:
        pass


def campaign_yaml(*, acf: str, engine: str, strategy: str = "joint", generations: int = 2, pool_size: int = 8,
                  seed: int = 0) -> str:
    """A small static softmax campaign (128 x 4096 fp16: whole rows in registers, ~0.1 s per candidate)."""
    return f"""
name: search-test
kernel: {{source: "{SOFTMAX}"}}
shapes: [{{name: small, M: 128, N: 4096, dtype: float16}}]
target: sm_90
objectives: [registers, theoretical_occupancy]
acf: {acf}
search: {{engine: {engine}, strategy: {strategy}, generations: {generations}, pool_size: {pool_size}}}
evaluation: {{workers: 1}}
seed: {seed}
"""


RunFn = Callable[..., tuple[RunDir, list[TrialRecord]]]


@pytest.fixture
def run_yaml(tmp_path: Path, ptxas: Ptxas, monkeypatch: pytest.MonkeyPatch) -> RunFn:
    """Write a campaign next to the test's files, run it through ``run_campaign``, return (run, records)."""
    from paretotune.runner import loop, start

    monkeypatch.setattr(loop, "make_evaluator", lambda campaign, ptxas, run, objectives:
                        InProcessEvaluator(campaign, ptxas, run))
    count = iter(range(1000))

    def run(text: str) -> tuple[RunDir, list[TrialRecord]]:
        i = next(count)
        path = tmp_path / f"campaign{i}.yaml"
        path.write_text(text)
        campaign = load_campaign(path)
        run_dir = start.start_run(campaign, tmp_path / f"run{i}", ptxas, campaign.spec.seed)
        return run_dir, loop.run_campaign(campaign, run_dir, ptxas)

    return run
