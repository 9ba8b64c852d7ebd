"""The README's quickstart, end to end: the real CLI on configs/quickstart.yaml, as shipped.

Real Triton AOT compiles for sm_90, real ptxas 13.3 builds with CompileIQ-sampled ACFs, the real CompileIQ
engine over every generation of the campaign's budget. Run twice with its ``seed: 0``, it gives the same records.
"""
from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from paretotune.cli import main as cli
from paretotune.store import RunDir

QUICKSTART = Path(__file__).resolve().parents[1] / "configs" / "quickstart.yaml"


TIMINGS = ("compile_s", "measure_s", "stages")  # where the time went: the only fields that may differ


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One run of the quickstart as the README starts it, and what it printed."""
    out = tmp_path_factory.mktemp("quickstart") / "run"
    capture = io.StringIO()
    with contextlib.redirect_stdout(capture):
        assert cli(["run", str(QUICKSTART), "--out", str(out), "--quiet"]) == 0
    return out, capture.getvalue()


def test_quickstart_finds_an_acf_candidate_that_dominates_the_baseline(quickstart: tuple[Path, str]) -> None:
    out, printed = quickstart
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


def _records(run: Path) -> list[dict]:
    """results.jsonl's records by candidate id (the file keeps the order compiles finished in, which is timing),
    without their timings; an ACF as its size, its bytes' hash left out: CompileIQ encrypts every sample with
    a fresh nonce, so the same controls come out as other bytes in each run."""
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    for row in rows:
        for name in TIMINGS:
            row.pop(name)
        row["acf"] = row["acf"] and (run / "acf" / f"{row['acf']}.acf").stat().st_size
    return sorted(rows, key=lambda row: row["candidate_id"])


def test_the_same_seed_gives_the_same_records(quickstart: tuple[Path, str], tmp_path: Path) -> None:
    """CompileIQ's samples, the order the engine is told the results in (the order its proposals were issued,
    whichever compile finished first), and the twins: all the same from seed 0, so the second run's records are
    the first's."""
    again = tmp_path / "again"
    assert cli(["run", str(QUICKSTART), "--out", str(again), "--quiet"]) == 0
    first, second = _records(quickstart[0]), _records(again)
    assert sum(bool(r["acf"]) for r in first) >= 20 and any("twin_of" in r["extra"] for r in first)
    assert first == second


def test_the_readme_shows_the_front_the_quickstart_prints(quickstart: tuple[Path, str]) -> None:
    """The README's first output block is this run's front as printed, every line but
    the ACF's name: CompileIQ encrypts each sample with a fresh nonce, so its file name differs per run."""
    printed = quickstart[1]
    readme = (QUICKSTART.parents[1] / "README.md").read_text()
    start = printed.index("front 0, ordered by knee pick")
    table = printed[start:printed.index("\n\n", start)].splitlines()
    shown = readme[readme.index("front 0, ordered by knee pick"):].split("\n```", 1)[0].splitlines()
    acf = re.compile(r"\b[0-9a-f]{12}\b")
    assert [acf.sub("<acf>", line) for line in shown] == [acf.sub("<acf>", line) for line in table]
