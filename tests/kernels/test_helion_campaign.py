"""A static campaign on the Helion softmax, end to end through the campaign loop (spawned CPU workers)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from paretotune.campaign.load import campaign_from_text, load_campaign
from paretotune.kernels.bundled.helion_softmax import helion_softmax
from paretotune.runner.loop import run_campaign
from paretotune.runner.start import start_run
from paretotune.toolchain.ptxas import Ptxas

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.mark.parametrize("name", ["static_helion_softmax", "static_helion_rms_norm", "static_triton_matmul",
                                  "static_triton_layer_norm"])
def test_shipped_configs_load(name: str) -> None:
    from paretotune.campaign.resolve import make_adapter, make_objectives

    campaign = load_campaign(CONFIGS / f"{name}.yaml")
    assert all(make_adapter(campaign).default_config(shape) for shape in campaign.shapes)
    assert make_objectives(campaign)


@pytest.mark.slow
def test_static_helion_campaign_end_to_end(ptxas: Ptxas, tmp_path: Path) -> None:
    if not os.environ.get("CIQ_SEARCH_SPACES_DIR"):
        pytest.skip("set CIQ_SEARCH_SPACES_DIR to a folder with CompileIQ's ptxas 13.3 search space")
    data = yaml.safe_load((CONFIGS / "static_helion_softmax.yaml").read_text())
    data["search"].update(generations=1, pool_size=10)
    data["evaluation"] = {"workers": 2, "compile_timeout_s": 60}
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    campaign = campaign_from_text(path.read_text(), path)

    run = start_run(campaign, tmp_path / "run", ptxas, seed=0)
    records = run_campaign(campaign, run, ptxas)

    twins = [r for r in records if "twin_of" in r.extra]  # front 0's ACF configs measured without their ACF
    assert len(records) == 1 + 10 + len(twins)  # the baseline plus one generation, then the twins
    assert all(r.acf is None for r in twins)
    baseline = records[0]
    assert baseline.is_baseline and baseline.acf is None and baseline.status == "ok"
    assert baseline.config == helion_softmax.default
    assert baseline.values["registers"] > 0 and 0 < baseline.values["theoretical_occupancy"] <= 100
    ok = [r for r in records if r.status == "ok"]
    assert len(ok) >= 8, [r.error for r in records if r.status != "ok"]
    searched = [r for r in ok if not r.is_baseline and r not in twins]  # twins carry no ACF (checked above)
    assert all(r.acf and (run.path / "acf" / f"{r.acf}.acf").is_file() for r in searched)
    assert len({(r.values["registers"], r.values["spill_bytes"]) for r in ok}) > 1  # the search moved something
    assert [r.candidate_id for r in run.records()] == [r.candidate_id for r in records]  # all stored
