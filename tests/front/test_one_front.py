"""One front model, one hypervolume rule: ``front``, its JSON, the report, the service and progress.csv agree."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from paretotune.front import build_front, front_document, render_json
from paretotune.pareto import hypervolume_columns
from paretotune.report import load_report_data
from paretotune.search.progress import PROGRESS, hypervolume_progress
from paretotune.service.progress import RunView
from tests.pareto.conftest import results_frame, write_run

ACF = "cd" * 32
DIRECTIONS = {"spill_bytes": "min", "registers": "min", "occupancy": "max"}
COLUMNS = [{"column": c, "direction": d, "objective": c, "shape": "s"} for c, d in DIRECTIONS.items()]


def row(cid: int, registers: float, occupancy: float, **extra: object) -> dict[str, object]:
    return {"candidate_id": cid, "values": {"spill_bytes": 0.0, "registers": registers, "occupancy": occupancy},
            **extra}


ROWS = [row(0, 128, 25, is_baseline=True), row(1, 64, 50, acf=ACF), row(2, 96, 50), row(3, 255, 12.5),
        {"candidate_id": 4, "status": "failed", "error": "ptxas: illegal control", "values": {}}]


def test_a_column_nothing_moved_is_left_out_everywhere(tmp_path: Path) -> None:
    """Zero spills everywhere: the front, its JSON, the report, the service and progress.csv all leave
    spill_bytes out and agree on the hypervolume (progress.csv used to keep it and stay at 0)."""
    run = write_run(tmp_path / "run", COLUMNS, ROWS)
    report = build_front(run)
    assert report.constant == ("spill_bytes",) and report.hypervolume == pytest.approx(0.5 * 0.5)
    assert json.loads(render_json(report))["hypervolume_left_out"] == ["spill_bytes"]

    hypervolume_progress(run)
    stored = pd.read_csv(run / PROGRESS)
    assert stored["hypervolume"].iloc[-1] == pytest.approx(report.hypervolume)

    data = load_report_data(run)
    assert data.progress is not None and data.progress.ignored == ["spill_bytes"]
    assert list(data.progress.table["hypervolume"]) == pytest.approx(list(stored["hypervolume"]))
    assert data.summary.hypervolume == report.hypervolume

    served = RunView().front(run)
    assert served is not None and served["hypervolume"] == report.hypervolume
    assert served["hypervolume_left_out"] == ["spill_bytes"]


def test_the_report_front_table_is_the_front_model(tmp_path: Path) -> None:
    """Same rows, same (knee) order, same ratios and ACF shares as the front model renders."""
    run = write_run(tmp_path / "run", COLUMNS, ROWS)
    doc = front_document(build_front(run))
    table = load_report_data(run).front
    assert list(table["candidate_id"]) == [r["candidate_id"] for r in doc["front"]]
    for (_, got), want in zip(table.iterrows(), doc["front"], strict=True):
        for c in DIRECTIONS:
            ratio = want["values"][c]["gain"]  # null in JSON where undefined (0 spills against 0)
            assert math.isnan(got[f"{c} gain"]) if ratio is None else got[f"{c} gain"] == pytest.approx(ratio)
        if want["acf"]:  # its no-ACF twin is the baseline (same config): 128 / 64 registers
            assert want["acf_share"]["registers"] == pytest.approx(2.0) and got["acf share"] == "2.000x registers"
        else:
            assert want["acf_share"] is None and got["acf share"] == "no ACF"


@pytest.mark.parametrize(("rows", "left_out", "flat"), [
    (ROWS, ("spill_bytes",), False),
    ([row(0, 128, 25, is_baseline=True), row(1, 128, 25)], (), True),  # nothing varies: all kept, 0 anyway
    ([row(0, 128, 25, is_baseline=True)], (), True),  # one usable row
    ([], (), True),
])
def test_hypervolume_columns(rows: list[dict[str, object]], left_out: tuple[str, ...], flat: bool) -> None:
    measured = hypervolume_columns(results_frame(rows), DIRECTIONS)
    assert measured.left_out == left_out and measured.flat is flat
    assert list(measured.directions) == [c for c in DIRECTIONS if c not in left_out]


def test_a_reference_point_drops_its_left_out_value(tmp_path: Path) -> None:
    """ref has one value per objective column; the left-out column's value goes with it."""
    run = write_run(tmp_path / "run", COLUMNS, ROWS)
    curve = hypervolume_progress(run, ref=[5.0, 1.0, 1.0], write=False)
    assert curve["hypervolume"].iloc[-1] == pytest.approx(build_front(run).hypervolume)
    with pytest.raises(ValueError):
        hypervolume_progress(run, ref=[1.0, 1.0], write=False)


def test_an_acf_that_adds_nothing_ranks_below_its_no_acf_twin(tmp_path: Path) -> None:
    """The quickstart's case: the ACF's share is 1.000x, so its twin (same config, no ACF) is what `front`, the
    report and validate's choice recommend first (was: rank 1 the ACF, the lower candidate id)."""
    from paretotune.validate.validation import choose_candidates
    from paretotune.front import render_text
    from paretotune.store import RunDir

    warps32 = {"num_stages": 1, "num_warps": 32}
    run = write_run(tmp_path / "run", COLUMNS, [
        row(0, 167, 18.75, is_baseline=True, config={"num_stages": 1, "num_warps": 4}),
        row(1, 31, 100, acf=ACF, config=warps32), row(2, 31, 100, config=warps32)])
    report = build_front(run)
    assert list(report.front["candidate_id"]) == [2, 1] and report.share_text(1, report.front.iloc[1]).startswith(
        "1.000x")
    lines = render_text(report).splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("----")) + 1
    assert lines[first].split()[:3] == ["1", "2", "-"] and lines[first + 1].split()[:3] == ["2", "1", ACF[:12]]
    assert list(load_report_data(run).front["candidate_id"]) == [2, 1]
    assert choose_candidates(RunDir(run), top=6) == [2, 1]
