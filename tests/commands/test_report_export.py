"""`paretotune export RUN_DIR --format csv|parquet|json` and `paretotune report` through the CLI."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from paretotune.cli import main as cli_main
from paretotune.commands import export
from paretotune.pareto import rank_fronts
from paretotune.store import RunDir

from report.conftest import TWO_SHAPE_ACF, column, two_shape_run, write_run


def test_csv_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = two_shape_run(tmp_path / "run")
    assert cli_main(["export", str(run), "--format", "csv"]) == 0
    out = run / "export" / "results.csv"
    assert f"6 rows -> {out}" in capsys.readouterr().out
    table = pd.read_csv(out)
    assert list(table.columns[:6]) == ["candidate_id", "generation", "is_baseline", "status", "front", "crowding"]
    assert list(table["candidate_id"]) == [0, 1, 2, 3, 4, 5]
    ranking = rank_fronts(RunDir(run).results(), RunDir(run).directions())
    fronts = dict(zip(ranking.ranked["candidate_id"], ranking.ranked["front"], strict=True))
    assert [None if math.isnan(f) else int(f) for f in table["front"]] == [fronts.get(i) for i in range(6)]
    assert table.loc[5, "excluded_reason"] == "status=failed: compile timeout"
    assert json.loads(table.loc[1, "config"]) == {}
    assert table.loc[1, "acf"] == TWO_SHAPE_ACF
    assert table.loc[1, "runtime@small"] == pytest.approx(0.16)


def test_json_and_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = two_shape_run(tmp_path / "run")
    assert cli_main(["export", str(run), "--format", "json", "--out", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["candidate_id"] for r in rows] == [0, 1, 2, 3, 4, 5]
    assert rows[5]["front"] is None and rows[5]["runtime@small"] is None  # failed: unranked, no values
    assert rows[1]["config"] == {} and isinstance(rows[1]["extra"], dict)  # nested, not JSON text
    assert any(r["crowding"] is None for r in rows[:5])  # a front's extremes: infinite crowding -> null
    assert rows[1]["is_baseline"] is False and rows[0]["is_baseline"] is True


def test_parquet(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    run = two_shape_run(tmp_path / "run")
    out = tmp_path / "x.parquet"
    assert cli_main(["export", str(run), "--format", "parquet", "--out", str(out)]) == 0
    table = pd.read_parquet(out)
    assert len(table) == 6 and str(table["front"].dtype) == "Int64" and table["front"].isna().sum() == 1


def test_parquet_without_an_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    def missing(*args: object, **kwargs: object) -> None:
        raise ImportError("Unable to find a usable engine")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", missing)
    run = two_shape_run(tmp_path / "run")
    assert cli_main(["export", str(run), "--format", "parquet"]) == 2
    assert capsys.readouterr().err.strip() == ("paretotune: error: --format parquet needs pyarrow: pip install "
                                               "'paretotune[parquet]' (or use --format csv)")
    assert cli_main(["export", str(run), "--format", "parquet", "--out", "-"]) == 2


def test_empty_and_failed_runs(tmp_path: Path) -> None:
    columns = [column("runtime")]
    empty = export.export_table(RunDir(write_run(tmp_path / "a", columns, [])).results(), {"runtime": "min"})
    assert empty.empty and "runtime" in empty.columns and "front" in empty.columns
    failed = write_run(tmp_path / "b", columns, [{"candidate_id": 0, "is_baseline": True, "status": "failed",
                                                  "error": "boom"}])
    table = export.export_table(RunDir(failed).results(), {"runtime": "min"})
    assert table["front"].isna().all() and table.loc[0, "excluded_reason"] == "status=failed: boom"
    assert "runtime" in table.columns  # the objective column exists even though nothing was measured


def test_bad_run_dirs_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["export"], ["report"]):
        assert cli_main([*command, str(tmp_path / "missing")]) == 2
        assert capsys.readouterr().err == f"paretotune: error: {tmp_path / 'missing'}: no such run directory\n"


def test_report_command_writes_html_and_pngs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = two_shape_run(tmp_path / "run")
    out = tmp_path / "out"
    assert cli_main(["report", str(run), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"report: {out / 'report.html'} (5 plots)" in printed
    assert sorted(p.name for p in out.iterdir()) == ["front.png", "hypervolume.png", "parallel.png", "report.html",
                                                     "shapes.png"]


def test_config_knobs_become_columns_in_csv_and_parquet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One ``config.<knob>`` column per knob (lists as JSON text); the JSON export keeps config nested."""
    cols = [{"column": "registers", "direction": "min", "objective": "registers", "shape": "s"}]
    rows = [{"candidate_id": 0, "is_baseline": True, "config": {"block_sizes": [1024], "num_warps": 4},
             "values": {"registers": 20.0}},
            {"candidate_id": 1, "config": {"block_sizes": [256], "num_warps": 8}, "values": {"registers": 12.0}}]
    run = write_run(tmp_path / "run", cols, rows)
    assert cli_main(["export", str(run), "--format", "csv"]) == 0
    table = pd.read_csv(run / "export" / "results.csv")
    assert list(table["config.num_warps"]) == [4, 8] and list(table["config.block_sizes"]) == ["[1024]", "[256]"]
    assert list(table.columns).index("config.num_warps") < list(table.columns).index("acf")
    assert cli_main(["export", str(run), "--format", "parquet"]) == 0
    assert list(pd.read_parquet(run / "export" / "results.parquet")["config.num_warps"]) == [4, 8]
    capsys.readouterr()
    assert cli_main(["export", str(run), "--format", "json", "--out", "-"]) == 0
    out = capsys.readouterr().out
    assert "config.num_warps" not in out and json.loads(out)[1]["config"]["num_warps"] == 8
