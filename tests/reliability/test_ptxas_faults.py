"""Fault injection on a CPU machine: ptxas stand-ins that hang, crash, print garbage, or kill their worker.

Each affected candidate must be stored as failed with its reason, the campaign must complete (exit 0, budget
met), and every other candidate must be intact: status ok with the values the real ptxas gives. See
standins.py for why the stand-in misbehaves only on ACF builds.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from paretotune.store import RunDir
from reliability.conftest import cli_env, run_cli, small_quickstart
from reliability.standins import assigned, write_standin
from runner.invariants import check_front, check_records

REASONS = {
    "hang": r"^ptxas timed out after 4 s$",
    "crash": r"^ptxas exited -11",
    "garbage": r"^ptxas output not understood",
    "kill-worker": r"^worker process crashed",
}
# first-seen ACFs get these behaviours; "ok"s in between keep the first generation from failing as a whole
SCHEDULE = ["ok", "hang", "ok", "crash", "ok", "garbage", "ok", "kill-worker", "ok"]


@pytest.mark.slow
def test_faulty_ptxas_fails_only_its_candidates(tmp_path: Path, real_ptxas: Path) -> None:
    exe, state = write_standin(tmp_path, real_ptxas, SCHEDULE)
    campaign = small_quickstart(tmp_path, generations=2, pool_size=9, workers=2,
                                extra_evaluation="\n  compile_timeout_s: 4")
    out = tmp_path / "run"
    proc = run_cli("run", str(campaign), "--out", str(out), "--quiet", env=cli_env(PARETOTUNE_PTXAS=str(exe)),
                   timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = check_records(out, 18)
    check_front(out)

    behaviour = assigned(state)
    assert sorted(b for b in behaviour.values() if b != "ok") == sorted(REASONS)  # every fault was hit
    columns = [c.column for c in RunDir(out).objective_columns()]
    for rec in records:
        fault = behaviour.get(rec.acf or "", "ok")
        if fault == "ok":
            assert rec.status == "ok", (rec.candidate_id, rec.error)
            assert all(math.isfinite(rec.values[c]) for c in columns), rec.values
        else:
            assert rec.status == "failed", (rec.candidate_id, fault)
            assert re.search(REASONS[fault], rec.error), (fault, rec.error)
    hit = [r for r in records if behaviour.get(r.acf or "", "ok") != "ok"]  # an ACF may recur in a later generation
    assert sum(r.status == "failed" for r in records) == len(hit) >= len(REASONS)
    # intact: an ok candidate's build equals a build by the real ptxas of the same PTX and ACF
    _check_against_real_ptxas(out, records, real_ptxas)


REBUILD = """
import json, sys
from pathlib import Path
from paretotune.toolchain.ptxas import build_ptx, export_for_triton, find_ptxas
ptxas = find_ptxas()
export_for_triton(ptxas)  # before Triton is imported: its PTX version follows this ptxas
from paretotune.campaign.load import load_campaign
from paretotune.campaign.resolve import make_adapter
out, config, acf = Path(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
campaign = load_campaign(out / "campaign.yaml")
shape = campaign.shapes[0]
kptx = make_adapter(campaign).compile_ptx(config, shape, campaign.target)
build = build_ptx(ptxas, kptx.ptx, campaign.target, out / "acf" / f"{acf}.acf" if acf else None,
                  kernel_name=kptx.kernel_name, num_warps=kptx.num_warps, dynamic_shared=kptx.dynamic_shared,
                  enable_fp_fusion=kptx.enable_fp_fusion)
print(json.dumps([build.registers, build.spill_stores, build.spill_loads]))
"""


def _check_against_real_ptxas(out: Path, records: list, real_ptxas: Path) -> None:
    """Rebuild an ok ACF candidate and the baseline with the real ptxas, in a fresh process (Triton must see
    the real ptxas before it is imported), and compare with what the campaign stored."""
    ok = [r for r in records if r.status == "ok" and r.acf is not None][:1] + [r for r in records if r.is_baseline]
    for rec in ok:
        proc = subprocess.run([sys.executable, "-c", REBUILD, str(out), json.dumps(rec.config), rec.acf or ""],
                              env=cli_env(PARETOTUNE_PTXAS=str(real_ptxas)), capture_output=True, text=True,
                              check=False, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        stored = rec.extra[RunDir(out).objective_columns()[0].shape]
        assert json.loads(proc.stdout) == [stored["registers"], stored["spill_stores"], stored["spill_loads"]], \
            (rec.candidate_id, stored)


def test_hang_is_cut_at_the_limit_scaled_from_the_baseline(tmp_path: Path, real_ptxas: Path) -> None:
    """compile_timeout_s is only the ceiling: after the baseline, search candidates get
    compile_timeout_vs_baseline times its ptxas seconds (here 1x, floored at 2 s)."""
    from paretotune.campaign.schema import EvaluationSpec
    from paretotune.build.static_job import build_limit_s, scaled_ptxas_timeout

    exe, state = write_standin(tmp_path, real_ptxas, ["hang"])
    settings = {"compile_timeout_s": 120, "compile_timeout_vs_baseline": 1, "compile_timeout_min_s": 2}
    campaign = small_quickstart(tmp_path, generations=1, pool_size=9, workers=2,
                                extra_evaluation="".join(f"\n  {k}: {v}" for k, v in settings.items()))
    out = tmp_path / "run"
    proc = run_cli("run", str(campaign), "--out", str(out), "--quiet", env=cli_env(PARETOTUNE_PTXAS=str(exe)),
                   timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = check_records(out, 9)
    limit = scaled_ptxas_timeout(RunDir(out).baseline(), EvaluationSpec(**settings))
    assert limit < 120
    hung = [r for r in records if assigned(state).get(r.acf or "") == "hang"]
    assert hung and all(r.status == "failed" and r.error == f"ptxas timed out after {limit:g} s" for r in hung)
    assert sum(r.status == "ok" for r in records) == len(records) - len(hung)

    # a resumed run does not measure its baseline again: the evaluator takes the limit from the stored one
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_objectives
    from paretotune.measure.evaluators import StaticEvaluator
    from paretotune.runner.evaluator import evaluator_for
    from paretotune.toolchain.ptxas import find_ptxas

    resumed_campaign = load_campaign(out / "campaign.yaml")
    resumed = evaluator_for(resumed_campaign, find_ptxas(), RunDir(out), make_objectives(resumed_campaign))
    try:
        assert isinstance(resumed, StaticEvaluator)
        assert resumed.pool.job.keywords == {"ptxas_timeout_s": limit}
        assert resumed.pool.timeout_s == build_limit_s(RunDir(out).baseline(), EvaluationSpec(**settings), 1)
    finally:
        resumed.close()
