"""The GPU worker's build of a candidate hits the Triton cache entry the CPU pool's precompile wrote, whatever
the caller's environment.

Triton's cache key includes the variables of ``get_cache_invalidating_env_vars`` that are set
(``TRITON_DEFAULT_FP_FUSION`` among them). Set by the GPU worker and left unset in the pool worker, they gave
the two different keys and the GPU worker rebuilt every candidate (0.42 s each on the H200, 2026-12-01).

On a CPU: the pool worker precompiles a candidate for sm_90 (real Triton, real ptxas) into an empty cache;
then a process started the way the GPU worker is (the fork server, the campaign process's environment, then
:func:`paretotune.measure.gpu_worker.setup`) builds the same candidate the way its launch does (the adapter's
``precompile`` mirrors ``JITFunction.run``'s options; Helion kernels launch through it). Triton's compilation
listener says whether that build was a cache hit, and with which key.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from paretotune.campaign.load import campaign_from_text
from paretotune.build.fork_server import worker_context
from paretotune.build.pool import WorkerPool, adopt_environment
from paretotune.build.static_job import WorkerContext, evaluate_static, init_worker
from paretotune.records import Candidate
from paretotune.toolchain.ptxas import BUILD_ENV_DEFAULTS, find_ptxas

QUICKSTART = Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml"
CONFIG = {"num_warps": 16, "num_stages": 1}  # not the default config: the GPU worker's warm-up never built it


def gpu_side_build(environ: dict[str, str], conn: Any, campaign_path: str, campaign_text: str, ptxas_path: str,
                   ptxas_version: str, config: dict[str, Any]) -> None:
    """In a process started like the GPU worker: its setup, then the candidate's build as the launch does it;
    send back what Triton's compilation listener saw."""
    adopt_environment(environ)
    from paretotune.measure.gpu_worker import setup

    adapter = setup(campaign_path, campaign_text, ptxas_path, ptxas_version)
    campaign = campaign_from_text(campaign_text, Path(campaign_path))
    from triton import knobs
    from triton._C.libtriton import get_cache_invalidating_env_vars

    seen: list[dict[str, Any]] = []
    knobs.compilation.listener = lambda **kw: seen.append({"hash": kw["metadata"]["hash"],
                                                            "cache_hit": kw["cache_hit"]})
    adapter.precompile(config, campaign.shapes[0], None, campaign.target)
    conn.send({"builds": seen, "env_vars": get_cache_invalidating_env_vars()})


@pytest.mark.parametrize("caller_value", [None, "0"], ids=["unset-in-caller", "set-in-caller"])
def test_gpu_build_hits_the_pools_cache_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              caller_value: str | None) -> None:
    for name in BUILD_ENV_DEFAULTS:  # tests/conftest.py sets it for the whole session; a caller may not
        if caller_value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, caller_value)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    ptxas = find_ptxas()
    text = QUICKSTART.read_text()
    ctx = WorkerContext(campaign_path=str(QUICKSTART), campaign_text=text, ptxas_path=str(ptxas.path),
                        ptxas_version=ptxas.version, acf_dir=str(tmp_path / "acf"), precompile=True)
    pool = WorkerPool(evaluate_static, init_worker, (ctx,), 1, 180.0)
    try:
        rec = next(iter(pool.run([Candidate(candidate_id=1, generation=1, config=CONFIG, acf=None)])))
    finally:
        pool.close()
    assert rec.status == "ok", rec.error
    pool_entries = {p.parent.name for p in (tmp_path / "cache").glob("*/softmax_kernel.json")}
    assert pool_entries, "the pool's precompile wrote no Triton cache entry"

    mp = worker_context()
    parent, child = mp.Pipe()
    proc = mp.Process(target=gpu_side_build, args=(dict(os.environ), child, str(QUICKSTART), text, str(ptxas.path),
                                                   ptxas.version, CONFIG), daemon=True)
    proc.start()
    child.close()
    try:
        assert parent.poll(180), "the GPU-side build did not answer"
        got = parent.recv()
    finally:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    assert caller_value is None or got["env_vars"] == {"TRITON_DEFAULT_FP_FUSION": "false"}  # the caller's wins
    assert got["builds"] and all(b["cache_hit"] for b in got["builds"]), (
        f"the GPU-side build missed the pool's cache entry {sorted(pool_entries)}: {got}")
