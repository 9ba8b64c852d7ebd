"""The README's quickstart, end to end: the real CLI on configs/quickstart.yaml, as shipped.

Real Triton AOT compiles for sm_90, real ptxas 13.3 builds with CompileIQ-sampled ACFs, the real CompileIQ
engine over every generation of the campaign's budget.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from paretotune.cli import main as cli
from paretotune.store import RunDir

QUICKSTART = Path(__file__).resolve().parents[1] / "configs" / "quickstart.yaml"


def test_quickstart_finds_an_acf_candidate_that_dominates_the_baseline(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    assert cli(["run", str(QUICKSTART), "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "on the Pareto front" in printed and str(out) in printed

    spec = yaml.safe_load(QUICKSTART.read_text())
    budget = spec["search"]["generations"] * spec["search"]["pool_size"]
    df = pd.read_json(out / "results.jsonl", lines=True)
    twins = sum("twin_of" in e for e in df["extra"])  # no-ACF twins of front 0's ACF configs, after the search
    assert twins >= 1 and len(df) == budget + 1 + twins and df["candidate_id"].is_unique
    assert df["generation"].max() >= 2  # the engine was told and asked again, generation after generation
    assert df.iloc[0]["is_baseline"] and df.iloc[0]["acf"] == ""
    ok = df[df["status"] == "ok"]
    assert len(ok) >= 0.8 * len(df)

    directions = RunDir(out).directions()
    assert directions == {"spill_bytes": "min", "registers": "min", "theoretical_occupancy": "max"}
    base = df.iloc[0]

    def dominates(row: pd.Series) -> bool:
        no_worse = all(row[c] <= base[c] if d == "min" else row[c] >= base[c] for c, d in directions.items())
        better = any(row[c] < base[c] if d == "min" else row[c] > base[c] for c, d in directions.items())
        return no_worse and better

    winners = ok[(ok["acf"] != "") & ok.apply(dominates, axis=1)]
    assert not winners.empty
    for sha in winners["acf"]:  # every ACF is stored under its content hash with its version record
        acf = out / "acf" / f"{sha}.acf"
        assert acf.is_file() and __import__("hashlib").sha256(acf.read_bytes()).hexdigest() == sha
        record = json.loads((out / "acf" / f"{sha}.json").read_text())
        assert record["ptxas_version"] == "13.3" and record["target"] == "sm_90"
    meta = json.loads((out / "run.json").read_text())
    assert meta["versions"]["ptxas"].startswith("13.3")
