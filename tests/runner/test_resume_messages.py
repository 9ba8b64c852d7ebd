"""What ``paretotune resume`` says about the campaign it read (issue 45, defect 5): an error in an edited
``campaign.yaml`` names that file, the run's copy, not the original the run was started from; a complete run's
count is of search evaluations against the budget (the audit: "61 of 60 evaluations", the no-ACF twins
counted as search evaluations)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from reliability.test_bad_environment import refused

from paretotune.cli import main
from runner.conftest import Crash, write_campaign
from runner.test_resume import crash_after, start


def test_an_error_in_the_edited_copy_names_the_copy(tmp_path: Path, fake_evaluator: Any, ptxas: Any,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    campaign = write_campaign(tmp_path)
    with pytest.raises(Crash):
        start(campaign, out, ptxas, on_record=crash_after(4))
    copy = out / "campaign.yaml"
    copy.write_text(copy.read_text().replace("  pool_size: 9", "  pool_size: 9\n  pool_sise: 9"))
    assert refused(["resume", str(out)], capsys) == (f"paretotune: error: {copy}: search.pool_sise: unknown field "
                                                     "(did you mean 'pool_size'?)")
    copy.write_text(copy.read_text().replace("  pool_sise: 9\n", "").replace("triton_softmax", "triton_softmux"))
    # a valid but edited copy: the run's integrity rule (its hash in run.json) refuses it, naming the copy too
    assert refused(["resume", str(out)], capsys).startswith(
        f"paretotune: error: {copy}: differs from the campaign this run was made with")


def test_a_complete_run_counts_its_search_evaluations(tmp_path: Path, fake_evaluator: Any, ptxas: Any,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    records = start(write_campaign(tmp_path), out, ptxas)
    twins = sum("twin_of" in r.extra for r in records)
    assert twins > 0  # what made the count wrong: the twins the search adds after its budget is spent
    capsys.readouterr()
    assert main(["resume", str(out), "--quiet"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert re.fullmatch(rf".*: complete \(27 of 27 search evaluations, plus the baseline and {twins} no-ACF "
                        rf"twins?\); nothing to resume", first), first
