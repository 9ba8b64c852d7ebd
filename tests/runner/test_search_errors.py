"""Errors a search engine met inside itself and went on past (Helion's rounds, each ended by one) reach run.json
and the run's summary: a search that carried on poorer than it should have says so. The loop, store and CompileIQ
engine are real; the evaluator is fake (no compiles). The engine side (Helion's rounds named in one line each) is
tests/search/test_helion_engine.py."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from paretotune.campaign.load import load_campaign
from paretotune.runner.gpu_busy import record_timing
from paretotune.runner.loop import run_campaign
from paretotune.runner.session import search_errors_line
from paretotune.runner.start import start_run
from paretotune.store import RunDir
from runner.conftest import FakeEvaluator, write_campaign

LINE = "AssertionError at helion/autotuner/config_generation.py:2814 (encode_config)"


def test_errors_the_engine_went_on_past_reach_run_json_and_the_summary(tmp_path: Path, ptxas: Any,
                                                                        fake_evaluator: type[FakeEvaluator]) -> None:
    campaign = load_campaign(write_campaign(tmp_path, generations=1))
    run = start_run(campaign, tmp_path / "run", ptxas, campaign.spec.seed)
    run_campaign(campaign, run, ptxas)  # CompileIQ's engine met none: nothing recorded, nothing said
    assert "search_errors" not in run.meta() and search_errors_line(run) is None
    record_timing(run, schedule=None, records=[], wall_s=1.0, search_errors=[LINE, LINE])
    reopened = RunDir.open(run.path)  # run.json still passes every reader's checks
    assert reopened.meta()["search_errors"] == [LINE, LINE] and len(reopened.meta()["timing"]) == 2
    assert search_errors_line(reopened) == ("the search engine met 2 error(s) inside itself and went on past them, "
                                            f"its search the poorer for it: {LINE}")
    record_timing(run, schedule=None, records=[], wall_s=1.0)  # a later call (a resume) whose engine met none
    assert search_errors_line(RunDir.open(run.path)) is None
