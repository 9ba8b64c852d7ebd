"""ReportData from real quickstart runs and from synthetic edge cases, checked without any drawing."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from paretotune.errors import UserError
from paretotune.pareto import rank_fronts, select_all_shapes
from paretotune.report import load_report_data
from paretotune.report.build import MAX_PAIRS
from paretotune.report.verdicts import with_verdicts
from paretotune.store import RunDir

from .conftest import column, two_shape_run, validation_frame, write_run


def test_quickstart_summary_and_plots(quickstart_run: Path) -> None:
    data = load_report_data(quickstart_run)
    s = data.summary
    assert s.campaign == "quickstart-softmax-static"
    assert s.kernel == "paretotune.kernels.bundled.softmax:triton_softmax"
    assert s.shapes == ["wide (M=4096, N=16384, dtype=float16)"]
    assert s.objectives == [("spill_bytes", "min"), ("registers", "min"), ("theoretical_occupancy", "max")]
    assert s.budget.startswith("1 generations x 10 candidates = 10 evaluations plus the baseline (compileiq")
    assert s.target == "sm_90"
    assert s.versions["ptxas"].startswith("13.3") and "triton" in s.versions
    # 10 searched + the baseline + the no-ACF twins of front 0's ACF configs, added after the search
    twins = sum("twin_of" in r.extra for r in RunDir(quickstart_run).records())
    assert s.n_evaluated == 11 + twins and s.n_evaluated == len(RunDir(quickstart_run).results())

    run = RunDir(quickstart_run)
    results, directions = run.results(), run.directions()
    ranking = rank_fronts(results, directions)
    assert list(data.front["candidate_id"]) == [int(i) for i in ranking.front(0)["candidate_id"]]
    assert s.n_front == len(ranking.front(0)) and s.n_excluded == len(ranking.excluded)

    base = results.loc[results["is_baseline"]].iloc[0]
    assert data.baseline == {c: float(base[c]) for c in directions}
    row = data.front.iloc[0]
    assert row["registers gain"] == pytest.approx(base["registers"] / row["registers"])

    # every successful non-baseline candidate appears in each pair plot exactly once (grouped by equal values)
    usable = ranking.ranked.loc[~ranking.ranked["is_baseline"].astype(bool)]
    assert data.pairs, "three objectives give at least one pair"
    for pair in data.pairs:
        assert pair.points["count"].sum() == len(usable)
        assert pair.baseline == (data.baseline[pair.x.column], data.baseline[pair.y.column])
        assert (pair.points["front"] == 0).any() == (~ranking.front(0)["is_baseline"].astype(bool)).any()
    # spill bytes are 0 everywhere: the summary leaves them out, and so does the parallel plot, which with the two
    # objectives left would repeat the pair plot
    assert "spill_bytes = 0" in data.notes["constant"] and data.parallel is None
    assert data.notes["parallel"] == ("only 2 objectives vary (registers, theoretical_occupancy): the pair plot "
                                      "shows them all")
    assert data.shapes is None and data.all_shapes is None  # one shape
    assert data.validation is None
    assert data.plots()[-1:] == ["progress"]


def test_quickstart_progress_matches_hypervolume(quickstart_run: Path) -> None:
    from paretotune.pareto import hypervolume

    data = load_report_data(quickstart_run)
    assert data.progress is not None
    run = RunDir(quickstart_run)
    used = {c: run.directions()[c] for c in data.progress.columns}
    assert data.summary.hypervolume == pytest.approx(hypervolume(run.results(), used))
    assert list(data.progress.table["evaluation"]) == list(range(1, data.summary.n_evaluated + 1))
    assert np.all(np.diff(data.progress.table["hypervolume"]) >= 0)  # hypervolume never shrinks
    for c in data.progress.ignored:  # left out only because nothing differs from the baseline there
        assert run.results()[c].nunique() == 1


def test_two_shapes(tmp_path: Path) -> None:
    run = RunDir(two_shape_run(tmp_path / "run"))
    data = load_report_data(run.path)
    columns = run.objective_columns()
    assert all(p.x.shape == p.y.shape for p in data.pairs)  # no cross-shape scatter
    assert [(p.x.column, p.y.column) for p in data.pairs] == [("runtime@small", "occupancy@small"),
                                                              ("runtime@large", "occupancy@large")]
    chart = data.shapes
    assert chart is not None and chart.shapes == ["small", "large"] and chart.objectives == ["runtime", "occupancy"]
    assert "beat the baseline on every shape" in chart.selection and "geomean runtime" in chart.selection
    expected = select_all_shapes(run.results(), columns)
    assert data.all_shapes is not None and list(data.all_shapes["candidate_id"]) == list(expected["candidate_id"])
    assert chart.candidate_ids == [1, 2]  # 3 trades one shape for the other; 4 is worse everywhere
    bars = chart.bars.set_index(["candidate_id", "objective", "shape"])["improvement"]
    assert bars[(1, "runtime", "small")] == pytest.approx(0.20 / 0.16)  # speedup = baseline / candidate
    assert bars[(1, "runtime", "large")] == pytest.approx(1.00 / 0.80)
    assert bars[(2, "occupancy", "small")] == pytest.approx(75 / 50)  # "max": candidate / baseline
    assert bars[(1, "occupancy", "small")] == pytest.approx(1.0)
    assert data.plots() == ["pair:runtime@small:occupancy@small", "pair:runtime@large:occupancy@large", "shapes",
                            "parallel", "progress"]
    assert list(data.failures["candidate_id"]) == [5]


def test_two_shapes_without_a_common_winner(tmp_path: Path) -> None:
    columns = [column("runtime@a", shape="a"), column("runtime@b", shape="b")]
    rows = [{"candidate_id": 0, "is_baseline": True, "values": {"runtime@a": 1.0, "runtime@b": 1.0}},
            {"candidate_id": 1, "values": {"runtime@a": 0.5, "runtime@b": 2.0}},
            {"candidate_id": 2, "values": {"runtime@a": 2.0, "runtime@b": 0.5}}]
    data = load_report_data(write_run(tmp_path / "run", columns, rows))
    assert data.shapes is not None and data.all_shapes is not None and data.all_shapes.empty
    assert "Pareto front 0" in data.shapes.selection and data.shapes.candidate_ids == [1, 2]


def test_only_the_baseline(tmp_path: Path) -> None:
    columns = [column("runtime"), column("occupancy", "max")]
    run = write_run(tmp_path / "run", columns,
                    [{"candidate_id": 0, "is_baseline": True, "values": {"runtime": 0.2, "occupancy": 50.0}}])
    data = load_report_data(run)
    assert data.summary.n_evaluated == 1 and data.summary.n_front == 1
    assert list(data.front["is_baseline"]) == [True]
    assert [len(p.points) for p in data.pairs] == [0] and data.pairs[0].baseline == (0.2, 50.0)
    assert data.progress is None and "equals the baseline" in data.notes["progress"]
    assert data.summary.hypervolume == 0.0
    assert data.failures.empty


def test_all_failed(tmp_path: Path) -> None:
    columns = [column("runtime"), column("registers"), column("occupancy", "max")]
    run = write_run(tmp_path / "run", columns, [
        {"candidate_id": 0, "is_baseline": True, "status": "failed", "error": "ptxas: out of resources"}])
    data = load_report_data(run)
    assert data.plots() == []
    assert data.front.empty and data.baseline is None and data.summary.hypervolume is None
    assert "no successful baseline" in data.notes["progress"]
    assert "no candidate evaluated successfully" in data.notes["pairs"]
    assert "no candidate evaluated successfully" in data.notes["parallel"]
    assert list(data.failures["reason"]) == ["status=failed: ptxas: out of resources"]
    assert data.summary.n_failed == 1 and data.summary.n_excluded == 1


def test_empty_run(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [column("runtime")], [])
    data = load_report_data(run)
    assert data.summary.n_evaluated == 0 and data.plots() == [] and data.front.empty and data.failures.empty


def test_single_objective(tmp_path: Path) -> None:
    rows = [{"candidate_id": 0, "is_baseline": True, "values": {"runtime": 0.20}},
            {"candidate_id": 1, "values": {"runtime": 0.15}},
            {"candidate_id": 2, "values": {"runtime": 0.25}},
            {"candidate_id": 3, "status": "failed", "error": "timeout"}]
    data = load_report_data(write_run(tmp_path / "run", [column("runtime")], rows))
    assert data.pairs == [] and "one objective" in data.notes["pairs"]
    assert data.values is not None and data.values.baseline == 0.20
    assert list(data.values.points["candidate_id"]) == [0, 1, 2]
    assert list(data.values.points.loc[data.values.points["front"] == 0, "candidate_id"]) == [1]
    assert data.parallel is None
    assert data.progress is not None and data.summary.hypervolume == pytest.approx(0.25)  # 1 - 0.15 / 0.20
    assert list(data.progress.table["status"]) == ["ok", "ok", "ok", "failed"]
    assert data.plots() == ["values", "progress"]


def test_failures_and_constant_columns(tmp_path: Path) -> None:
    columns = [column("spill_bytes"), column("registers"), column("occupancy", "max")]
    rows = [{"candidate_id": 0, "is_baseline": True, "values": {"spill_bytes": 0, "registers": 128, "occupancy": 25}},
            {"candidate_id": 1, "values": {"spill_bytes": 0, "registers": 64, "occupancy": 50}},
            {"candidate_id": 2, "values": {"spill_bytes": 0, "registers": 64, "occupancy": 50}},
            {"candidate_id": 3, "values": {"spill_bytes": 0, "registers": 255, "occupancy": 12.5}},
            {"candidate_id": 4, "values": {"spill_bytes": 0, "occupancy": 50}},
            {"candidate_id": 5, "status": "failed", "error": "ptxas: illegal control"}]
    data = load_report_data(write_run(tmp_path / "run", columns, rows))
    assert "spill_bytes = 0" in data.notes["constant"]
    assert [(p.x.column, p.y.column) for p in data.pairs] == [("registers", "occupancy")]
    points = data.pairs[0].points
    assert points.set_index("x").loc[64.0, "count"] == 2 and points.set_index("x").loc[64.0, "ids"] == "1, 2"
    assert data.progress is not None and data.progress.ignored == ["spill_bytes"]
    assert data.summary.hypervolume == pytest.approx(0.5 * 0.5)  # registers 0.5x, occupancy 2x better: a 0.5 x 0.5 box
    assert list(data.failures["candidate_id"]) == [4, 5]
    assert list(data.failures["reason"]) == ["no finite value for registers", "status=failed: ptxas: illegal control"]


def test_many_objectives_cap_the_pairs(tmp_path: Path) -> None:
    names = [f"m{i}" for i in range(9)]  # 36 pairs
    rows = [{"candidate_id": i, "is_baseline": i == 0, "values": {n: float((i * (k + 1)) % 13 + 1)
                                                                   for k, n in enumerate(names)}} for i in range(6)]
    data = load_report_data(write_run(tmp_path / "run", [column(n) for n in names], rows))
    assert len(data.pairs) == MAX_PAIRS and data.pairs_omitted == 36 - MAX_PAIRS


def test_no_baseline_two_shapes(tmp_path: Path) -> None:
    columns = [column("runtime@a", shape="a"), column("runtime@b", shape="b")]
    rows = [{"candidate_id": 0, "is_baseline": True, "status": "failed", "error": "no GPU"},
            {"candidate_id": 1, "values": {"runtime@a": 1.0, "runtime@b": 2.0}},
            {"candidate_id": 2, "values": {"runtime@a": 2.0, "runtime@b": 1.0}}]
    data = load_report_data(write_run(tmp_path / "run", columns, rows))
    assert data.shapes is None and "no successful baseline" in data.notes["shapes"]
    # one objective on two shapes: the scatter compares the shapes
    assert [(p.x.column, p.y.column) for p in data.pairs] == [("runtime@a", "runtime@b")]
    assert data.pairs[0].baseline is None
    assert data.summary.hypervolume is None


def test_validation_verdicts(quickstart_copy: Path) -> None:
    ids = [int(i) for i in RunDir(quickstart_copy).results()["candidate_id"] if i > 0][:3]
    validation_frame("wide", ids).to_csv(quickstart_copy / "validation.csv", index=False)
    data = load_report_data(quickstart_copy)
    assert data.validation is not None
    assert list(data.validation["verdict"]) == ["control ok", "faster", "not significant", "error"]
    assert data.plots()[-1] == "validation"
    flagged = with_verdicts(validation_frame("wide", ids, control_significant=True))
    assert flagged["verdict"].iloc[0] == "control flagged"
    # a CSV round trip turns booleans into text; verdicts must not depend on it
    assert list(with_verdicts(pd.read_csv(quickstart_copy / "validation.csv"))["verdict"]) == \
        list(data.validation["verdict"])


def test_bad_run_dirs(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such run directory"):
        load_report_data(tmp_path / "missing")
    with pytest.raises(UserError, match="not a paretotune run directory"):
        load_report_data(tmp_path)
    (tmp_path / "run.json").write_text("{")
    with pytest.raises(UserError, match="not valid JSON"):
        load_report_data(tmp_path)
    (tmp_path / "run.json").write_text(json.dumps({"objective_columns": []}))
    with pytest.raises(UserError, match="objective_columns"):
        load_report_data(tmp_path)
    run = write_run(tmp_path / "run", [column("runtime")], [])
    (run / "validation.csv").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(UserError, match=r"validation\.csv"):
        load_report_data(run)


def test_an_outlier_gets_a_log_axis_and_a_constant_column_no_parallel_axis(tmp_path: Path) -> None:
    """A small static campaign: one candidate spills to 255 registers (the rest 30-40), spill bytes are 0
    everywhere. Registers get a log axis (linear, the rest sat in a corner); the parallel plot shows the three
    columns that vary, not the constant one the summary leaves out."""
    from paretotune.report.build import log_axis

    columns = [column("spill_bytes"), column("registers"), column("occupancy", "max"), column("shared_memory")]
    regs = [167, 30, 31, 32, 34, 36, 38, 40, 255]
    rows = [{"candidate_id": i, "is_baseline": i == 0,
             "values": {"spill_bytes": 0, "registers": r, "occupancy": 100.0 * 16 / (16 + r),
                        "shared_memory": 1024.0 * (1 + i % 3)}} for i, r in enumerate(regs)]
    data = load_report_data(write_run(tmp_path / "run", columns, rows))
    pair = next(p for p in data.pairs if (p.x.column, p.y.column) == ("registers", "occupancy"))
    assert pair.log_x and pair.log_y is False  # occupancy is spread evenly: linear
    assert data.parallel is not None
    assert [c.column for c in data.parallel.columns] == ["registers", "occupancy", "shared_memory"]
    assert not log_axis(np.array([1.0, 2, 3, 4, 5, 6, 7, 8, 9, 10])) and not log_axis(np.array([0.0, 1, 2, 500]))
