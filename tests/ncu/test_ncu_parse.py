"""Parsing the real H200 outputs: raw CSV by header name, units, NVTX cells, details page, .ncu-rep."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from paretotune.ncu.parse import (
    LaunchRow,
    NvtxRange,
    error_cells,
    normalize_unit,
    parse_csv,
    parse_nvtx_cell,
    parse_value,
    read_report,
    to_dataframe,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ncu"
OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
L1 = "l1tex__throughput.avg.pct_of_peak_sustained_active"
DUR = "gpu__time_duration.sum"
REGS = "launch__registers_per_thread"


def rows_of(name: str) -> list[LaunchRow]:
    return parse_csv((FIXTURES / name).read_text())


@pytest.mark.parametrize("cell,expected", [
    ("1,980,000", 1980000.0), ("42,784", 42784.0), ("3,196,833,707.30", 3196833707.3), ("15.52", 15.52),
    ("0", 0.0), ("n/a", None), ("(!) n/a", None), ("no data", None), ("PolicySpread", None),
    ("(256, 1, 1)", None), ("", None), ("16 (16)", 16.0), ("1,440 (1,440;1,440)", 1440.0),
])
def test_parse_value(cell: str, expected: float | None) -> None:
    assert parse_value(cell) == expected


def test_raw_base_nvtx_triton_one_row_by_header_name() -> None:
    (row,) = rows_of("raw_csv_base_nvtx_triton.txt")
    assert row.kernel == "_helion_copy"
    assert row.push_pop == (NvtxRange("<default domain>", "cand_2"),)
    assert row.start_end == ()
    assert row.metrics[DUR] == 32512.0 and row.units[DUR] == "ns"
    assert row.metrics[OCC] == 76.08 and row.units[OCC] == "%"
    assert row.metrics[L1] == 39.71
    assert row.metrics["sm__maximum_warps_per_active_cycle_pct"] == 100.0
    assert row.metrics[REGS] == 16.0 and row.units[REGS] == "register/thread"
    assert row.metrics["dram__bytes_read.sum"] == 67116288.0
    assert row.metrics["profiler__replayer_passes"] == 10.0
    assert row.metrics["launch__cluster_scheduling_policy"] is None
    assert row.raw("launch__cluster_scheduling_policy") == "PolicySpread"
    assert row.raw("Block Size") == "(256, 1, 1)"


def test_raw_default_eight_rows_share_one_kernel_name() -> None:
    rows = rows_of("raw_csv_default_triton_8kernels.txt")
    assert [r.result_id for r in rows] == list(range(8))
    assert {r.kernel for r in rows} == {"_helion_copy"}
    assert all(r.push_pop == () for r in rows)  # no --nvtx: no NVTX columns at all
    # ncu.md table: configs 0..3, warm-up launches first
    assert [rows[i].metrics[DUR] for i in range(4)] == [42560.0, 31328.0, 32256.0, 32288.0]
    assert [rows[i].metrics[OCC] for i in range(4)] == [31.18, 81.34, 76.61, 78.64]
    assert [rows[i].metrics[REGS] for i in range(4)] == [16.0, 16.0, 16.0, 26.0]


def test_domain_push_pop_two_launches_in_one_range() -> None:
    rows = rows_of("raw_csv_domain_pushpop.txt")
    assert len(rows) == 2
    assert all(r.push_pop == (NvtxRange("autotune", "cand_1"),) for r in rows)
    assert [r.metrics["launch__block_size"] for r in rows] == [256.0, 512.0]


def test_range_replay_row() -> None:
    (row,) = rows_of("range_replay_domain_csv.txt")
    assert row.kernel == "range" and row.raw("Stream") == "n/a"
    assert row.metrics[DUR] == 544448.0 and row.metrics["profiler__replayer_passes"] == 10.0
    assert row.push_pop == (NvtxRange("autotune", "cand_1"),)


def test_log_file_mixes_prof_lines_and_csv() -> None:
    (row,) = rows_of("log_file_csv.txt")
    assert row.metrics[DUR] == 52832.0 and row.kernel == "k(float *, int)"


def test_metric_instances_cells_read_as_aggregate() -> None:
    (row,) = rows_of("raw_csv_metric_instances_values.txt")
    assert row.raw(REGS) == "16 (16)"
    assert row.metrics[REGS] == 16.0


def test_mangled_base_keeps_triton_name() -> None:
    (row,) = rows_of("raw_csv_mangled_base.txt")
    assert row.kernel == "_helion_copy"


def test_scaled_units_are_normalized_to_base() -> None:
    (row,) = rows_of("raw_csv_print_units_auto.txt")
    assert row.units[DUR] == "ns" and row.metrics[DUR] == pytest.approx(52928.0)
    assert row.units["dram__bytes_read.sum"] == "byte"
    assert row.metrics["dram__bytes_read.sum"] == pytest.approx(67113984.0)
    raw = parse_csv((FIXTURES / "raw_csv_print_units_auto.txt").read_text(), normalize_units=False)[0]
    assert raw.units[DUR] == "us" and raw.metrics[DUR] == pytest.approx(52.928)


@pytest.mark.parametrize("unit,expected", [
    ("us", ("ns", 1e3)), ("ms", ("ns", 1e6)), ("Mbyte", ("byte", 1e6)), ("Kbyte/block", ("byte/block", 1e3)),
    ("Gbyte/s", ("byte/s", 1e9)), ("Ghz", ("hz", 1e9)), ("ns", ("ns", 1.0)), ("%", ("%", 1.0)),
    ("register/thread", ("register/thread", 1.0)), ("SM", ("SM", 1.0)),
])
def test_normalize_unit(unit: str, expected: tuple[str, float]) -> None:
    assert normalize_unit(unit) == expected


def test_nvtx_cells() -> None:
    assert parse_nvtx_cell('490  "<default domain>:cand_2:none:none:none:none:none:none" ') == (
        NvtxRange("<default domain>", "cand_2"),)
    nested = '7  "autotune:outer:none:none:none:none:ASCII:outer" "autotune:pt_1_a:none:none:none:none:ASCII:pt_1_a" '
    assert [r.name for r in parse_nvtx_cell(nested)] == ["outer", "pt_1_a"]
    assert parse_nvtx_cell(' "1:autotune:cand_1:none:none:none:none:ASCII:cand_1" ', start_end=True) == (
        NvtxRange("autotune", "cand_1"),)
    assert parse_nvtx_cell("") == ()


def test_details_page_start_end_is_pivoted() -> None:
    (row,) = rows_of("details_csv_domain_startend.txt")
    assert row.start_end == (NvtxRange("autotune", "cand_1"),) and row.push_pop == ()
    assert row.metrics[DUR] == 83456.0 and row.units[DUR] == "ns"
    assert row.metrics["launch__block_size"] == 128.0


def test_output_without_results_parses_to_nothing() -> None:
    for name in ("no_kernels_matched.txt", "nvtx_nomatch_warning.txt", "app_exit_code.txt",
                 "child_process_application_only.txt", "invalid_metric.txt"):
        assert rows_of(name) == []


def test_truncated_table_skips_the_cut_line() -> None:
    text = (FIXTURES / "raw_csv_default_triton_8kernels.txt").read_text()
    cut = text[: text.rindex('"7",') + 200]  # last row cut mid-line, as when ncu is killed
    assert len(parse_csv(cut)) == 7


def test_error_cells_from_text_page_and_csv() -> None:
    assert error_cells((FIXTURES / "invalid_metric.txt").read_text()) == {"foo__bar.sum": 9}
    assert error_cells((FIXTURES / "raw_csv_base_nvtx_triton.txt").read_text()) == {}


def test_to_dataframe() -> None:
    df = to_dataframe(rows_of("import_raw_csv.txt"), [DUR, OCC])
    assert list(df.columns) == ["id", "kernel", "nvtx_domain", "nvtx_range", DUR, OCC]
    assert list(df["nvtx_range"]) == ["cand_0", "cand_1", "cand_2", "cand_3"]
    assert df[DUR].tolist() == pytest.approx([42784.0, 31456.0, 31456.0, 32544.0])


def _has_ncu_report() -> bool:
    try:
        import ncu_report  # noqa: F401
    except ImportError:
        return False
    return True


needs_ncu_report = pytest.mark.skipif(not _has_ncu_report(), reason="pip install ncu-report")


@needs_ncu_report
def test_read_report_matches_import_raw_csv() -> None:
    """The .ncu-rep and `ncu -i … --csv --page raw` of it (scaled units) agree after unit normalization."""
    rep = read_report(FIXTURES / "triton_4cands_sol_occ_launch_mwa.ncu-rep")
    csv_rows = rows_of("import_raw_csv.txt")
    assert [r.push_pop for r in rep] == [(NvtxRange("<default domain>", f"cand_{i}"),) for i in range(4)]
    assert {r.kernel for r in rep} == {"_helion_copy"}
    for a, b in zip(rep, csv_rows):
        for metric in (DUR, OCC, L1, REGS, "sm__maximum_warps_per_active_cycle_pct",
                       "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                       "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"):
            assert math.isclose(a.metrics[metric], b.metrics[metric], rel_tol=1e-4), metric
    first = rep[0]
    assert first.metrics[DUR] == 42784.0 and first.units[DUR] == "ns"
    assert first.metrics[OCC] == pytest.approx(31.1177, abs=1e-3)
    assert first.metrics["profiler__replayer_passes"] == 11.0


@needs_ncu_report
def test_read_report_requested_metrics_and_missing_ones() -> None:
    (first, *_) = read_report(FIXTURES / "triton_4cands_sol_occ_launch_mwa.ncu-rep", [DUR, "dram__bytes.sum"])
    assert set(first.metrics) == {DUR, "dram__bytes.sum"}
    assert first.metrics["dram__bytes.sum"] is None  # not collected by those sections
    assert first.raw("dram__bytes.sum") == "(!) n/a"


@needs_ncu_report
def test_read_report_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_report(tmp_path / "none.ncu-rep")
