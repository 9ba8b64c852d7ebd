"""`paretotune front RUN_DIR [--json]` on small run directories written through RunDir."""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paretotune.commands import front
from paretotune.errors import UserError
from paretotune.front import build_front

from pareto.conftest import write_run
from report.conftest import synthetic_acf

ACF, ACF_BYTES = synthetic_acf("front command")


def v(ra: float, oa: float, rb: float, ob: float) -> dict[str, float]:
    return {"runtime@a": ra, "occupancy@a": oa, "runtime@b": rb, "occupancy@b": ob}


ROWS = [
    {"candidate_id": 0, "is_baseline": True, "config": {"BLOCK": 64}, "values": v(0.2, 0.5, 0.4, 0.5)},
    {"candidate_id": 1, "config": {"BLOCK": 128}, "acf": ACF, "values": v(0.1, 0.6, 0.2, 0.6)},
    {"candidate_id": 2, "config": {"BLOCK": 32}, "values": v(0.15, 0.75, 0.5, 0.75)},  # slower on b, more occupancy
    {"candidate_id": 3, "config": {"BLOCK": 16}, "values": v(0.3, 0.25, 0.6, 0.25)},  # dominated
    {"candidate_id": 4, "config": {"BLOCK": 256}, "status": "failed", "error": "ptxas: too many registers",
     "values": {}},
]


def run_front(run_dir: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    parser = argparse.ArgumentParser()
    front.configure(parser)
    assert front.main(parser.parse_args([str(run_dir), *extra])) == 0
    return capsys.readouterr().out


def test_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                     two_shape_columns: list[dict[str, str]]) -> None:
    run_dir = write_run(tmp_path / "run", two_shape_columns, ROWS)
    doc = json.loads(run_front(run_dir, capsys, "--json"))
    assert doc["n_evaluated"] == 5
    assert doc["baseline"]["candidate_id"] == 0
    assert [r["candidate_id"] for r in doc["front"]] == [2, 1]  # a knee tie (each best on two of four): no ACF first
    first = doc["front"][1]
    assert first["acf"] == ACF and first["config"] == {"BLOCK": 128} and first["crowding"] is None  # inf -> null
    # the raw value and its one reading, the gain (a time objective's is its speedup, baseline / candidate)
    assert first["values"]["runtime@a"] == {"value": 0.1, "unit": "ms", "gain": pytest.approx(2.0)}
    assert set(first["values"]["occupancy@a"]) == {"value", "unit", "gain"}
    assert first["values"]["occupancy@a"]["unit"] == "%"
    assert doc["excluded"] == [{"candidate_id": 4, "status": "failed",
                                "reason": "status=failed: ptxas: too many registers"}]
    assert [r["candidate_id"] for r in doc["all_shapes"]] == [1]
    assert doc["all_shapes"][0]["speedups"] == {"a": pytest.approx(2.0), "b": pytest.approx(2.0)}
    assert doc["hypervolume"] > 0


def test_text_report(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                     two_shape_columns: list[dict[str, str]]) -> None:
    run_dir = write_run(tmp_path / "run", two_shape_columns, ROWS)
    out = run_front(run_dir, capsys)
    assert "5 evaluated, 1 excluded, 2 on the Pareto front" in out
    assert ACF[:12] in out and ACF[:13] not in out
    assert "0.1 (2.000x)" in out and "BLOCK=128" in out  # runtime as a speedup, the same reading as all-shapes
    assert "runtime@a [ms, speedup]" in out and "occupancy@a [%, gain]" in out
    assert "ordered by knee pick" in out
    assert "every shape" in out and "2.000x (a)" in out
    assert "candidate 4: status=failed: ptxas: too many registers" in out


def test_single_shape_and_no_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    columns = [{"column": "runtime", "direction": "min", "objective": "runtime", "shape": "default"}]
    rows = [{"candidate_id": 0, "is_baseline": True, "status": "failed", "error": "no GPU"},
            {"candidate_id": 1, "values": {"runtime": 0.2}}]
    run_dir = write_run(tmp_path / "run", columns, rows)
    doc = json.loads(run_front(run_dir, capsys, "--json"))
    assert doc["baseline"] is None and doc["hypervolume"] is None and doc["all_shapes"] is None
    assert [r["candidate_id"] for r in doc["front"]] == [1]
    assert doc["front"][0]["values"]["runtime"]["gain"] is None
    assert "baseline: none usable" in run_front(run_dir, capsys)


def test_empty_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    columns = [{"column": "runtime", "direction": "min", "objective": "runtime", "shape": "default"}]
    run_dir = write_run(tmp_path / "run", columns, [])
    assert "no candidate evaluated successfully yet" in run_front(run_dir, capsys)
    assert json.loads(run_front(run_dir, capsys, "--json"))["front"] == []


def test_bad_run_dirs(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such run directory"):
        build_front(tmp_path / "missing")
    with pytest.raises(UserError, match="not a paretotune run directory"):
        build_front(tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="not a directory"):
        build_front(tmp_path / "file")
    (tmp_path / "run.json").write_text("{")
    with pytest.raises(UserError, match="not valid JSON"):
        build_front(tmp_path)
    (tmp_path / "run.json").write_text("{}")
    with pytest.raises(UserError, match="objective_columns"):
        build_front(tmp_path)


@pytest.mark.skipif(importlib.util.find_spec("paretotune.commands.run") is None,
                    reason="cli.py imports every command; 'run' is not written yet")
def test_cli_exit_code_for_bad_run_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from paretotune.cli import main

    assert main(["front", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.startswith("paretotune: error: ")


def test_an_objective_nothing_moved_is_left_out_of_the_hypervolume(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Zero spills everywhere would pin the hypervolume to 0; front leaves that column out and says so."""
    columns = [{"column": "spill_bytes", "direction": "min", "objective": "spill_bytes", "shape": "s"},
               {"column": "registers", "direction": "min", "objective": "registers", "shape": "s"}]
    rows = [{"candidate_id": 0, "is_baseline": True, "values": {"spill_bytes": 0.0, "registers": 100.0}},
            {"candidate_id": 1, "acf": ACF, "values": {"spill_bytes": 0.0, "registers": 50.0}}]
    run = write_run(tmp_path / "run", columns, rows)
    doc = json.loads(run_front(run, capsys, "--json"))
    assert doc["hypervolume"] == pytest.approx(0.5) and doc["hypervolume_left_out"] == ["spill_bytes"]
    assert "left out, the same for every candidate: spill_bytes" in run_front(run, capsys)


def test_one_reading_of_a_faster_candidate_across_front_json_and_report(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The same candidate, twice as fast as the baseline with half its registers, reads 2.000x (speedup) and
    2.000x (gain: baseline / value, > 1 better) in the front table, its JSON and the report's front table;
    units are printed."""
    from paretotune.report import load_report_data, render_html

    columns = [{"column": "runtime", "direction": "min", "objective": "runtime", "shape": "s"},
               {"column": "registers", "direction": "min", "objective": "registers", "shape": "s"}]
    rows = [{"candidate_id": 0, "is_baseline": True, "values": {"runtime": 0.2, "registers": 100.0}},
            {"candidate_id": 1, "acf": ACF, "values": {"runtime": 0.1, "registers": 50.0}}]
    run = write_run(tmp_path / "run", columns, rows)
    text = run_front(run, capsys)
    assert "0.1 (2.000x)" in text and "50 (2.000x)" in text
    assert "runtime [ms, speedup]" in text and "registers [regs, gain]" in text
    cells = json.loads(run_front(run, capsys, "--json"))["front"][0]["values"]
    assert cells["runtime"]["gain"] == pytest.approx(2.0) and cells["registers"]["gain"] == pytest.approx(2.0)
    data = load_report_data(run)
    row = data.front[data.front["candidate_id"] == 1].iloc[0]
    assert row["runtime gain"] == pytest.approx(2.0) and row["registers gain"] == pytest.approx(2.0)
    page = render_html(data)
    assert "runtime [ms]" in page and "2.000x" in page and "baseline / value where lower is better" in page


@pytest.mark.parametrize("argv", [["front"], ["export", "--format", "json", "--out", "-"]], ids=["front", "export"])
def test_a_reader_that_leaves_early_ends_the_command_quietly(argv: list[str], tmp_path: Path,
                                                            two_shape_columns: list[dict[str, str]]) -> None:
    """`paretotune front RUN | head -1`: the reader is gone before the text is written (its end of the pipe
    closed first, so every write fails as it would after head's one line). Was: internal error, exit 1."""
    run_dir = write_run(tmp_path / "run", two_shape_columns, ROWS, acfs={ACF: ACF_BYTES})
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "paretotune.cli", argv[0], str(run_dir), *argv[1:]],
                              stdout=write, stderr=subprocess.PIPE, text=True, env=env, timeout=120, check=False)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (0, "")
