"""A ptxas that hangs holds only its own worker: with the steady schedule the other worker goes on with
candidates the engine proposed after the hung one, and those are stored before it (real CLI, real compiles,
a ptxas stand-in that hangs on the first ACF until the campaign's ptxas limit cuts it).

With a generation barrier this order is impossible: no candidate of a later generation is even proposed
before every candidate of the earlier one is stored.
"""
from __future__ import annotations

from pathlib import Path


from paretotune.store import RunDir
from reliability.conftest import cli_env, run_cli, small_quickstart
from reliability.standins import assigned, write_standin
from runner.invariants import check_front, check_records


def test_hung_compile_does_not_hold_later_candidates(tmp_path: Path, real_ptxas: Path) -> None:
    exe, state = write_standin(tmp_path, real_ptxas, ["hang"])
    settings = {"compile_timeout_s": 25, "compile_timeout_vs_baseline": 0}  # the hang lasts 25 s
    campaign = small_quickstart(tmp_path, generations=2, pool_size=9, workers=2,
                                extra_evaluation="".join(f"\n  {k}: {v}" for k, v in settings.items()))
    out = tmp_path / "run"
    proc = run_cli("run", str(campaign), "--out", str(out), "--quiet", env=cli_env(PARETOTUNE_PTXAS=str(exe)),
                   timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = check_records(out, 18)
    check_front(out)
    hung = [r for r in records if assigned(state).get(r.acf or "") == "hang"]
    assert len(hung) == 1 and hung[0].error == "ptxas timed out after 25 s", hung
    stored_before = records[:records.index(hung[0])]  # results.jsonl order is the order of storing
    later = [r for r in stored_before if r.generation > hung[0].generation]
    assert later, (f"no candidate proposed after the hung one (generation {hung[0].generation}) was stored "
                   f"before it: {[(r.candidate_id, r.generation) for r in stored_before]}")
    timing = RunDir(out).meta()["timing"]
    assert [t["schedule"] for t in timing] == ["steady"]
    phases = timing[0]["phases_s"]  # where the wall time went: the hang is the search's, not the start's
    assert set(phases) == {"setup", "baseline", "engine", "search", "twins", "close"}
    assert phases["search"] >= 25 > max(phases["setup"], phases["baseline"], phases["engine"]), phases
