"""The GPU campaign's CPU stage (precompile mode) on a CPU: one Triton compile per candidate, and a ptxas
that hangs inside Triton's own compile is cut off at the campaign's compile timeout.

Triton runs ptxas without a time limit; the worker gives it a ptxas wrapped in ``timeout``. Without that a
hanging ACF would hold the worker until the pool's deadline and leave the ptxas running after it.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from reliability.standins import write_standin

from paretotune.campaign.load import campaign_from_text
from paretotune.campaign.resolve import make_adapter
from paretotune.campaign.schema import EvaluationSpec
from paretotune.build.pool import WorkerPool
from paretotune.build.static_job import (
    WorkerContext,
    build_limit_s,
    evaluate_static,
    init_worker,
    job_after_baseline,
    scaled_ptxas_timeout,
)
from paretotune.records import Candidate, TrialRecord
from paretotune.toolchain.acf import AcfStore
from paretotune.toolchain.ptxas import find_ptxas

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "configs" / "quickstart.yaml"


@pytest.fixture
def acfs(tmp_path: Path) -> tuple[Path, list[str]]:
    """Two ACFs from CompileIQ's ptxas 13.3 space, stored by content hash."""
    from compileiq.ciq import Search
    from compileiq.search_spaces.compilers import PtxasSearchSpace
    from compileiq.types import SearchConfiguration, WorkerTypes

    config = SearchConfiguration(pool_size=6, generations=1, problem_type="min", num_objectives=1)
    tuner = Search(objective_function=lambda _c: None, search_space=PtxasSearchSpace(version="13.3"),
                   search_config=config, worker_type=WorkerTypes.MANUAL)
    store = AcfStore(tmp_path / "acf")
    return tmp_path / "acf", [store.put_hex(h, ptxas_version="13.3", target="sm_90", source="compileiq").sha256
                              for h in tuner.sample(2)]


def run_one(tmp_path: Path, ptxas: Path, acf_dir: Path, sha: str, timeout_s: float,
            campaign_text: str | None = None, job: Callable[[Candidate], TrialRecord] = evaluate_static,
            precompile: bool = True, baseline: bool = False) -> TrialRecord:
    text = campaign_text or QUICKSTART.read_text()
    ctx = WorkerContext(campaign_path=str(QUICKSTART), campaign_text=text, ptxas_path=str(ptxas),
                        ptxas_version=find_ptxas().version, acf_dir=str(acf_dir), precompile=precompile,
                        compile_timeout_s=timeout_s)
    pool = WorkerPool(job, init_worker, (ctx,), 1, 120.0)
    try:
        cand = Candidate(candidate_id=1, generation=0, config={"num_warps": 8, "num_stages": 1},
                         acf=None if baseline else sha, is_baseline=baseline)
        return next(iter(pool.run([cand])))
    finally:
        pool.close()


# a campaign that narrows the kernel's space wraps the adapter (kernels/overrides.py): it must precompile too
NARROWED = QUICKSTART.read_text().replace("  source: paretotune.kernels.bundled.softmax:triton_softmax\n",
                                          "  source: paretotune.kernels.bundled.softmax:triton_softmax\n"
                                          "  space: {num_warps: [8, 16]}\n")


@pytest.mark.parametrize("campaign_text", [None, NARROWED], ids=["adapter", "narrowed-space"])
def test_one_compile_per_candidate(tmp_path: Path, acfs: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch,
                                   campaign_text: str | None) -> None:
    assert NARROWED != QUICKSTART.read_text()
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    rec = run_one(tmp_path, find_ptxas().path, acfs[0], acfs[1][0], 60, campaign_text)
    assert rec.status == "ok", rec.error
    # one compile: no separate no-ACF compile for the PTX, and no second ptxas run for the static objectives
    assert set(rec.stages) == {"precompile_s"}
    entries = [json.loads(p.read_text()) for p in (tmp_path / "cache").glob("*/*.json") if "__grp" not in p.name]
    with_acf = [e["ptx_options"].split()[1] for e in entries if e.get("ptx_options")]
    assert with_acf == [str(acfs[0] / f"{acfs[1][0]}.acf")]
    # the other build is the worker's warm-up: the default config, no ACF, compiled before its first candidate
    loaded = campaign_from_text(campaign_text or QUICKSTART.read_text(), QUICKSTART)
    default = make_adapter(loaded).default_config(loaded.shapes[0])
    warm = [{"num_warps": e["num_warps"], "num_stages": e["num_stages"]} for e in entries if not e.get("ptx_options")]
    assert warm == [default]
    # the static objectives come from the report of Triton's own ptxas run, equal to a static campaign's ptxas -v
    static = run_one(tmp_path, find_ptxas().path, acfs[0], acfs[1][0], 60, campaign_text, precompile=False)
    assert static.status == "ok" and set(static.stages) == {"ptx_s", "ptxas_s"}
    assert rec.extra == static.extra and rec.values == static.values


def test_hang_inside_tritons_ptxas_is_a_timeout(tmp_path: Path, acfs: tuple[Path, list[str]],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    exe, _ = write_standin(tmp_path, find_ptxas().path, ["hang"])
    rec = run_one(tmp_path, exe, acfs[0], acfs[1][0], 3)
    assert rec.status == "failed"
    assert rec.error == "ptxas timed out after 3 s (in Triton's compile)"
    assert rec.compile_s < 30  # cut off by the wrapper, not by the pool's 120 s deadline


def test_hang_is_cut_at_the_limit_the_baseline_set(tmp_path: Path, acfs: tuple[Path, list[str]],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """After the baseline, the pool's job carries a tighter ptxas limit than the campaign's compile_timeout_s;
    Triton's own ptxas (the wrapper reads the limit on every call) is cut off at it."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    exe, _ = write_standin(tmp_path, find_ptxas().path, ["hang"])
    evaluation = EvaluationSpec(compile_timeout_s=60, compile_timeout_vs_baseline=10, compile_timeout_min_s=2)
    baseline = TrialRecord(candidate_id=0, generation=0, config={}, acf=None, is_baseline=True, status="ok",
                           stages={"ptxas_s": 0.25})
    job = job_after_baseline(baseline, evaluation)
    assert scaled_ptxas_timeout(baseline, evaluation) == 2.5
    rec = run_one(tmp_path, exe, acfs[0], acfs[1][0], 60, job=job)
    assert rec.status == "failed"
    assert rec.error == "ptxas timed out after 2.5 s (in Triton's compile)"


@pytest.mark.parametrize(("ptxas_s", "factor", "expected"), [
    (0.1, 30, 10.0),     # never under compile_timeout_min_s
    (1.5, 30, 45.0),     # 30x the baseline
    (4.0, 30, 60.0),     # never over compile_timeout_s
    (1.5, 0, 60.0),      # 0 turns scaling off
    (None, 30, 60.0),    # a baseline without a ptxas time (a failed build) leaves the campaign's limit
])
def test_scaled_ptxas_timeout(ptxas_s: float | None, factor: float, expected: float) -> None:
    evaluation = EvaluationSpec(compile_timeout_s=60, compile_timeout_vs_baseline=factor)
    stages = {} if ptxas_s is None else {"ptxas_s": ptxas_s}
    baseline = TrialRecord(candidate_id=0, generation=0, config={}, acf=None, is_baseline=True,
                           status="ok" if ptxas_s else "failed", stages=stages)
    assert scaled_ptxas_timeout(baseline, evaluation) == expected


@pytest.mark.parametrize(("compile_s", "ptxas_s", "shapes", "factor", "expected"), [
    (0.08, 0.07, 1, 10, 10.0 + 2 * 10.0 + 5.0),   # a baseline found in Triton's cache: both floors
    (1.4, 0.06, 1, 10, 14.0 + 2 * 10.0 + 5.0),    # 10x its 1.4 s build (the slowest layer_norm baseline here)
    (12.0, 0.5, 2, 10, 2 * (60.0 + 2 * 15.0) + 5.0),  # per shape, never over compile_timeout_s
    (1.0, 0.06, 1, 0, 60.0 + 30.0),               # 0 turns scaling off: the campaign's limit, as before
    (0.0, None, 2, 10, 2 * 60.0 + 30.0),          # no baseline build figure (a failed baseline): as before
])
def test_the_whole_build_is_cut_at_a_limit_scaled_from_the_baseline(
        compile_s: float, ptxas_s: float | None, shapes: int, factor: float, expected: float) -> None:
    evaluation = EvaluationSpec(compile_timeout_s=60, build_timeout_vs_baseline=factor)  # ptxas: 30x (default)
    baseline = TrialRecord(candidate_id=0, generation=0, config={}, acf=None, is_baseline=True,
                           status="ok" if ptxas_s else "failed", stages={"ptxas_s": ptxas_s} if ptxas_s else {},
                           compile_s=compile_s)
    assert build_limit_s(baseline, evaluation, shapes) == expected
    assert build_limit_s(None, evaluation, shapes) == shapes * 60.0 + 30.0  # before the baseline


def test_baseline_measures_its_own_ptxas_time(tmp_path: Path, acfs: tuple[Path, list[str]],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The search's ptxas limit is scaled from the baseline's ptxas seconds, so the baseline runs ptxas -v even
    when Triton's compile ran ptxas (here forced: TRITON_ALWAYS_COMPILE skips Triton's cache)."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    rec = run_one(tmp_path, find_ptxas().path, acfs[0], acfs[1][0], 60, baseline=True)
    assert rec.status == "ok", rec.error
    assert rec.stages.get("ptxas_s", 0) > 0
