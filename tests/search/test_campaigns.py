"""Each ACF space kind with each engine, on a small CPU softmax campaign through the real loop and ptxas.

Space kinds: generated (CompileIQ samples ACFs), a finite list of .acf files, a zip pack (the no-ACF
baseline is one of its choices), and none (kernel configs only). The softmax has 4 configs, so a finite
space holds 4 x (1 + 3 ACFs) = 16 points and a config-only space 4: small enough to be exhausted.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from paretotune.records import TrialRecord
from paretotune.search.progress import hypervolume_progress
from tests.search.conftest import N_CONFIGS, RunFn, campaign_yaml

ROOT = Path(__file__).resolve().parents[2]


def _search(records: list[TrialRecord]) -> list[TrialRecord]:
    """The records the engine proposed: not the baseline, not the no-ACF twins measured after the search."""
    assert records[0].is_baseline and records[0].acf is None and records[0].status == "ok"
    twins = [r for r in records if "twin_of" in r.extra]
    assert records[len(records) - len(twins):] == twins and all(r.acf is None for r in twins)
    return records[1:len(records) - len(twins)]


def _points(records: list[TrialRecord]) -> list[tuple[str, str | None]]:
    return [(json.dumps(r.config, sort_keys=True), r.acf) for r in records]


def _shas(datas: list[bytes]) -> set[str]:
    return {hashlib.sha256(d).hexdigest() for d in datas}


def _files_yaml(files: list[Path]) -> str:
    return "{files: [" + ", ".join(f'"{p}"' for p in files) + "]}"


@pytest.mark.parametrize("engine", ["compileiq", "random"])
def test_generated_acfs(run_yaml: RunFn, engine: str) -> None:
    run, records = run_yaml(campaign_yaml(acf="{search_space: ptxas-13.3}", engine=engine, pool_size=7))
    found = _search(records)
    assert len(found) == 14  # generations x pool_size: the budget is spent exactly
    assert all(r.acf is not None and run.acf_path(r.acf).is_file() for r in found)
    assert sum(r.status == "ok" for r in found) >= 10
    assert len(set(_points(found))) == len(found)  # de-duplicated


@pytest.mark.parametrize("engine", ["compileiq", "random"])
def test_the_same_seed_samples_the_same_acfs(run_yaml: RunFn, engine: str) -> None:
    """Seeded through to CompileIQ (its engine, and its sampler for random search): the same seed gives the same
    configs, the same builds and ACFs of the same size (bytes differ: each sample is encrypted with a fresh
    nonce); another seed other ones."""
    def run(seed: int) -> list[tuple[str, int, str, dict[str, float]]]:
        campaign = campaign_yaml(acf="{search_space: ptxas-13.3}", engine=engine, pool_size=7, seed=seed)
        found, out = run_yaml(campaign), []
        for r in _search(found[1]):
            assert r.acf is not None
            out.append((json.dumps(r.config, sort_keys=True), found[0].acf_path(r.acf).stat().st_size, r.status,
                        r.values))
        return out

    first = run(5)
    assert first == run(5)
    assert len({size for _, size, _, _ in first}) > 1  # not one ACF drawn again and again
    assert [size for _, size, _, _ in run(6)] != [size for _, size, _, _ in first]


@pytest.mark.parametrize("engine", ["compileiq", "nsga2", "random"])
def test_finite_files(run_yaml: RunFn, acf_files: list[Path], sampled_acfs: list[bytes], engine: str) -> None:
    run, records = run_yaml(campaign_yaml(acf=_files_yaml(acf_files), engine=engine))
    found = _search(records)
    assert 8 <= len(found) <= 16
    assert {r.acf for r in found} <= _shas(sampled_acfs) | {None}
    assert len(set(_points(found))) == len(found)  # never the same point twice
    assert all(r.status == "ok" for r in found)
    for sha in {r.acf for r in found} - {None}:
        assert run.acf_path(sha).read_bytes() in sampled_acfs


def test_pack_grid_includes_baseline_choice(run_yaml: RunFn, acf_pack: Path, sampled_acfs: list[bytes]) -> None:
    """An exhaustive grid over a zip pack evaluates every config with no ACF and with each ACF, then stops."""
    _, records = run_yaml(campaign_yaml(acf=f'{{pack: "{acf_pack}"}}', engine="grid", generations=3))
    found = _search(records)
    assert len(found) == N_CONFIGS * 4 < 3 * 8  # ended early: the grid was exhausted before the budget
    assert {r.acf for r in found} == _shas(sampled_acfs) | {None}
    assert sum(r.acf is None for r in found) == N_CONFIGS  # the no-ACF choice, once per config
    assert len(set(_points(found))) == len(found)
    assert all(r.status == "ok" for r in found)


def test_pack_nsga2(run_yaml: RunFn, acf_pack: Path, sampled_acfs: list[bytes]) -> None:
    _, records = run_yaml(campaign_yaml(acf=f'{{pack: "{acf_pack}"}}', engine="nsga2", seed=3))
    found = _search(records)
    assert {r.acf for r in found} <= _shas(sampled_acfs) | {None}
    assert len({r.acf for r in found}) >= 3  # explores the list, not one ACF
    assert len(set(_points(found))) == len(found)


@pytest.mark.parametrize("engine", ["compileiq", "nsga2", "random", "grid"])
def test_config_only_space_is_exhausted(run_yaml: RunFn, engine: str) -> None:
    """With no ACFs the softmax has 4 configs: each is evaluated once and the campaign ends early."""
    _, records = run_yaml(campaign_yaml(acf="{search_space: none}", engine=engine))
    found = _search(records)
    assert all(r.acf is None for r in found)
    configs = [json.dumps(r.config, sort_keys=True) for r in found]
    assert len(configs) == len(set(configs)) == N_CONFIGS


def test_sequential_generated(run_yaml: RunFn) -> None:
    """Phase 1: configs without ACF; phase 2: ACFs only, at the knee config (fewest registers, most occupancy)."""
    _, records = run_yaml(campaign_yaml(acf="{search_space: ptxas-13.3}", engine="compileiq",
                                        strategy="sequential", pool_size=7))
    found = _search(records)
    phase1 = [r for r in found if r.acf is None]
    phase2 = [r for r in found if r.acf is not None]
    assert found[: len(phase1)] == phase1  # configs first
    assert len(phase1) == N_CONFIGS and len(found) == 14
    best = min((r for r in phase1 if r.status == "ok"),
               key=lambda r: (r.values["registers"], -r.values["theoretical_occupancy"]))
    assert {json.dumps(r.config, sort_keys=True) for r in phase2} == {json.dumps(best.config, sort_keys=True)}
    assert best.config["num_warps"] == 32


def test_sequential_nsga2_files(run_yaml: RunFn, acf_files: list[Path], sampled_acfs: list[bytes]) -> None:
    _, records = run_yaml(campaign_yaml(acf=_files_yaml(acf_files), engine="nsga2", strategy="sequential"))
    found = _search(records)
    phase1 = [r for r in found if r.acf is None]
    phase2 = found[len(phase1):]
    assert len(phase1) == N_CONFIGS and all(r.acf is None for r in found[:N_CONFIGS])
    # phase 2 tries the 3 ACFs at one config; its no-ACF option there was answered from phase 1
    assert {r.acf for r in phase2} == _shas(sampled_acfs)
    assert len({json.dumps(r.config, sort_keys=True) for r in phase2}) == 1


def test_cli_pack_grid(tmp_path: Path, acf_pack: Path, ptxas: object) -> None:
    """The whole path: `paretotune run` with the worker pool, then hypervolume progress from the run dir."""
    campaign = tmp_path / "pack.yaml"
    campaign.write_text(campaign_yaml(acf='{pack: pack.zip}', engine="grid", generations=1, pool_size=6))
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "paretotune.cli", "run", str(campaign), "--out", str(out), "--quiet"],
                          check=False, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    every = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    # after the grid: the no-ACF twins of front 0's ACF configs that had no no-ACF point yet
    rows = [r for r in every if "twin_of" not in r["extra"]]
    twins = [r for r in every if "twin_of" in r["extra"]]
    assert every[:7] == rows and all(r["acf"] == "" for r in twins)
    assert len(rows) == 1 + 6 and rows[0]["is_baseline"]
    assert [r["acf"] == "" for r in rows[1:]] == [True, False, False, False, True, False]  # grid order
    progress = hypervolume_progress(out, ref=[1.1, 1.1])
    assert (out / "progress.csv").is_file()
    assert list(progress["evaluation"]) == list(range(1, 8 + len(twins)))
    hv = progress["hypervolume"].to_numpy()
    assert (hv[1:] >= hv[:-1]).all() and hv[-1] > hv[0] > 0  # num_warps 8 beats the 4-warp baseline
