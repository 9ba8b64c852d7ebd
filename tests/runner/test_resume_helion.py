"""Resume with the helion engine (Helion's LFBOTreeSearch over a real Helion ConfigSpec, engine: auto): a run
crashed at records and resumed stores exactly what an uninterrupted run stores, candidate by candidate.

The loop, store, checkpoints, engine and Helion's search are real; the evaluator is the fake of
runner/conftest.py (deterministic values from config and ACF, out-of-order records, no compiles), taking a Feed
so the loop runs its steady schedule. One island: its batches are asked in one order however records arrive,
so candidate ids are reproducible (two islands interleave by arrival, which only the engine's log replays).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from paretotune.store import RunDir
from runner.conftest import Crash, FakeEvaluator
from runner.invariants import check_front, check_helion_ledger, check_records
from runner.test_resume import crash_after, resume, start

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "helion_aot"
BUDGET = 5 * 9

CAMPAIGN = f"""\
name: resume-helion
kernel:
  source: {FIXTURES}/scale_rows.py:scale_rows
  inputs: {FIXTURES}/scale_rows.py:inputs
shapes:
  - {{name: wide, M: 512, N: 4096}}
objectives: [spill_bytes, registers, theoretical_occupancy]
acf:
  files: [a.acf, b.acf]
search:
  generations: 5
  pool_size: 9
  helion: {{islands: 1}}
evaluation:
  workers: 1
seed: 11
"""


def write(folder: Path) -> Path:
    folder.mkdir()
    for name in ("a", "b"):  # binary, like ACFs; never built: the evaluator is fake
        (folder / f"{name}.acf").write_bytes(bytes(range(256)) * 4 + name.encode())
    path = folder / "campaign.yaml"
    path.write_text(CAMPAIGN)
    return path


def table(run: Path) -> list[tuple[int, str, Any, str]]:
    return sorted((r.candidate_id, json.dumps(r.config, sort_keys=True), r.acf, json.dumps(r.values, sort_keys=True))
                  for r in check_records(run, BUDGET))


def test_crashed_and_resumed_helion_run_equals_the_uninterrupted_one(tmp_path: Path, feed_fake_evaluator: Any,
                                                                     ptxas: Any) -> None:
    start(write(tmp_path / "a"), tmp_path / "a" / "run", ptxas)
    FakeEvaluator.evaluations.clear()
    out = tmp_path / "b" / "run"
    with pytest.raises(Crash):
        start(write(tmp_path / "b"), out, ptxas, on_record=crash_after(6))
    with pytest.raises(Crash):
        resume(out, ptxas, on_record=crash_after(25))  # past the first batch: the replay crosses a barrier
    resume(out, ptxas)

    meta = RunDir(out).meta()
    # engine auto chose Helion's search (and says so)
    assert "Helion's LFBOTreeSearch" in " ".join(meta["kernel"]["notes"])
    assert table(tmp_path / "a" / "run") == table(out)
    assert check_helion_ledger(out, RunDir(out).records()) >= BUDGET  # what it was told is what was stored
    assert check_front(tmp_path / "a" / "run") == check_front(out)
    assert any(r.acf for r in RunDir(out).records())  # the ACF list is one dimension of the search
