"""A NaN or infinite objective value is never recorded (the 2026-12-01 audit: front, report, export and resume
accepted one, and it could sit on a front). The loop stores such a candidate as failed, the value left out,
and says which value it was; the engine is told nothing for it."""
from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from paretotune.cli import main
from paretotune.records import Candidate, TrialRecord
from runner.conftest import FakeEvaluator, use_fake_evaluator, write_campaign
from runner.test_resume import start


class NonFiniteEvaluator(FakeEvaluator):
    """Every third search candidate's registers are NaN, every fifth's occupancy is infinite. Those candidates
    are always measured (never the fake's own failures, which follow the ACF's content and so vary from run to
    run: CI once drew failures for both of ids 5 and 10, leaving no infinite value to check)."""

    def _one(self, c: Candidate) -> TrialRecord:
        if c.is_baseline:
            return super()._one(c)
        if c.candidate_id % 3 == 0:
            rec = self.measured(c)
            return replace(rec, values={**rec.values, "registers": math.nan})
        if c.candidate_id % 5 == 0:
            rec = self.measured(c)
            return replace(rec, values={**rec.values, "theoretical_occupancy": math.inf})
        return super()._one(c)


def test_non_finite_values_are_recorded_as_failures(tmp_path: Path, ptxas: Any, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    use_fake_evaluator(monkeypatch, NonFiniteEvaluator)
    out = tmp_path / "run"
    start(write_campaign(tmp_path, generations=2), out, ptxas)
    text = (out / "results.jsonl").read_text()
    assert "NaN" not in text and "Infinity" not in text
    rows = {r["candidate_id"]: r for r in map(json.loads, text.splitlines())}
    nan_ids = [i for i, r in rows.items() if r["error"].startswith("objective 'registers' is not a finite number")]
    inf_ids = [i for i, r in rows.items() if r["error"] == "objective 'theoretical_occupancy' is not a finite number "
               "(inf)"]
    assert nan_ids and inf_ids, rows
    assert all(i % 3 == 0 and rows[i]["status"] == "failed" and rows[i].get("registers") is None for i in nan_ids)
    assert all(i % 5 == 0 and rows[i]["status"] == "failed" and rows[i].get("theoretical_occupancy") is None
               for i in inf_ids)
    assert main(["front", str(out), "--json"]) == 0
    front = json.loads(capsys.readouterr().out)["front"]
    assert front and not {r["candidate_id"] for r in front} & set(nan_ids + inf_ids)
