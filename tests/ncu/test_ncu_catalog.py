"""The metric catalog and validation of other metric names."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from paretotune.ncu.catalog import (
    ALIASES,
    CATALOG,
    lookup,
    parse_query_metrics,
    query_metrics,
    resolve,
    validate_metrics,
)
from paretotune.ncu.errors import NcuMetricError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ncu"


def _header(name: str) -> tuple[list[str], list[str]]:
    lines = [ln for ln in (FIXTURES / name).read_text().splitlines() if ln.startswith('"')]
    header, units = list(csv.reader(lines))[:2]
    return header, units


def test_required_entries() -> None:
    expected = {
        "sm__warps_active.avg.pct_of_peak_sustained_active": ("%", "max"),
        "sm__maximum_warps_per_active_cycle_pct": ("%", "max"),
        "l1tex__throughput.avg.pct_of_peak_sustained_active": ("%", "max"),
        "gpu__time_duration.sum": ("ns", "min"),
        "dram__bytes.sum": ("byte", "min"),
        "launch__registers_per_thread": ("register/thread", "min"),
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": ("%", "max"),
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": ("%", "max"),
    }
    for name, (unit, direction) in expected.items():
        spec = CATALOG[name]
        assert (spec.unit, spec.direction) == (unit, direction)
        assert spec.description


def test_units_match_the_recorded_raw_page() -> None:
    """Every catalog metric present in the H200 raw CSV has the catalog's unit in its units row."""
    header, units = _header("raw_csv_base_nvtx_triton.txt")
    recorded = dict(zip(header, units))
    checked = [name for name in CATALOG if name in recorded]
    assert len(checked) >= 8  # all but dram__bytes.sum, lts/dram throughput (not requested there)
    for name in checked:
        assert recorded[name] == CATALOG[name].unit, name


def test_aliases() -> None:
    assert resolve("achieved_occupancy") == "sm__warps_active.avg.pct_of_peak_sustained_active"
    assert resolve("foo__bar.sum") == "foo__bar.sum"
    assert lookup("l1tex_throughput") is CATALOG["l1tex__throughput.avg.pct_of_peak_sustained_active"]
    assert lookup("nope") is None
    assert len(ALIASES) == len(CATALOG)


def test_validate_without_query_accepts_any_well_formed_name() -> None:
    validate_metrics(["sm__inst_executed.sum", "regex:sm__.*", "gpu__time_duration.sum"], None)
    with pytest.raises(NcuMetricError, match="not a metric name"):
        validate_metrics(["achieved occupancy"], None)


def test_validate_against_query_list() -> None:
    available = parse_query_metrics("Device NVIDIA H200 (GH100)\n---- ----\nMetric Name   Metric Description\n"
                                    "dram__bytes   # of bytes accessed in DRAM\n"
                                    "sm__inst_executed    # of warp instructions executed\n")
    assert available == {"dram__bytes", "sm__inst_executed"}
    validate_metrics(["dram__bytes.sum.per_second", "sm__inst_executed.avg", "launch__grid_size"], available)
    with pytest.raises(NcuMetricError, match="foo__bar.sum"):
        validate_metrics(["foo__bar.sum", "dram__bytes.sum"], available)


def test_query_metrics_is_cached(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    ncu = tmp_path / "ncu"
    names = "\n".join(f"unit{i}__metric_{i}    description" for i in range(60))
    ncu.write_text(f"#!/bin/sh\necho x >> {calls}\ncat <<'END'\nDevice X\n{names}\nEND\n")
    ncu.chmod(0o755)
    first = query_metrics(ncu, cache_dir=tmp_path / "cache")
    second = query_metrics(ncu, cache_dir=tmp_path / "cache")
    assert first == second and first is not None and len(first) == 60
    assert calls.read_text().count("x") == 1


def test_query_metrics_without_permission_gives_none(tmp_path: Path) -> None:
    ncu = tmp_path / "ncu"
    line = next(ln for ln in (FIXTURES / "err_nvgpuctrperm_deepgemm46.txt").read_text().splitlines()
                if ln.startswith("==ERROR=="))
    ncu.write_text(f"#!/bin/sh\necho 'Device NVIDIA GeForce'\necho '{line}'\nexit 1\n")
    ncu.chmod(0o755)
    assert query_metrics(ncu, cache_dir=tmp_path / "cache") is None
