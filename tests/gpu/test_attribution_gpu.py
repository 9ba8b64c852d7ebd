"""On a GPU: a runtime campaign adds no-ACF twins, and validate reports total, config-only and ACF-only."""
from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from paretotune.cli import main as cli

pytestmark = pytest.mark.gpu


def test_runtime_campaign_validate_reports_three_ratios(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "campaign.yaml"
    cfg.write_text(textwrap.dedent("""
        name: softmax-attribution
        kernel: {source: "paretotune.kernels.bundled.softmax:triton_softmax", space: {num_warps: [4, 16]}}
        shapes: [{name: wide, M: 4096, N: 16384, dtype: float16}]
        objectives: [runtime]
        search: {engine: compileiq, generations: 1, pool_size: 8}
        evaluation: {workers: 4, warmup_ms: 5, rep_ms: 20}
    """))
    run = tmp_path / "run"
    assert cli(["run", str(cfg), "--out", str(run), "--quiet"]) == 0
    df = pd.read_json(run / "results.jsonl", lines=True)
    twins = df[df["extra"].map(lambda e: "twin_of" in (e if isinstance(e, dict) else json.loads(e)))]
    front_acf = df[(df["acf"] != "") & (df["status"] == "ok")]
    assert not front_acf.empty
    assert (twins["acf"] == "").all() and (twins.loc[twins["status"] == "ok", "runtime"] > 0).all()
    capsys.readouterr()

    assert cli(["front", str(run)]) == 0
    assert "acf_share" in capsys.readouterr().out

    fastest = front_acf.sort_values("runtime")["candidate_id"].head(2)  # ACF candidates, whatever front 0 holds
    assert cli(["validate", str(run), "--candidates", ",".join(str(int(c)) for c in fastest), "--rounds", "12",
                "--rep-ms", "10"]) == 0
    printed = capsys.readouterr().out
    verdicts = pd.read_csv(run / "validation.csv")
    control = verdicts[verdicts["role"] == "control"].iloc[0]
    if control["significant"]:  # a flagged control: said in one line, nothing pinned
        assert "UNRELIABLE wide:" in printed and not (run / "artifacts").exists()
    else:
        assert "noise floor" in printed
    with_acf = verdicts[(verdicts["role"] == "candidate") & verdicts["twin_id"].notna()]
    assert not with_acf.empty, verdicts.to_string()
    for _, r in with_acf.iterrows():
        assert all(math.isfinite(r[c]) for c in ("speedup", "config_speedup", "acf_speedup", "acf_ci_low"))
        assert r["speedup"] == pytest.approx(r["config_speedup"] * r["acf_speedup"], rel=1e-9)
        assert f"cand {int(r['candidate_id'])}: total" in printed and "ACF-only" in printed
    assert "best no-ACF config in the search" in printed
