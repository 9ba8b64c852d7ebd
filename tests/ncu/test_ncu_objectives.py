"""occupancy, l1tex_throughput and ncu_metric read ShapeMeasurement.ncu."""
from __future__ import annotations

import pytest

from paretotune.objectives.base import ShapeMeasurement
from paretotune.objectives.ncu_objectives import NCU_OBJECTIVES, L1texThroughput, NcuMetric, Occupancy
from paretotune.toolchain.arch import get_target

OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
L1 = "l1tex__throughput.avg.pct_of_peak_sustained_active"


def measurement(**ncu: float) -> ShapeMeasurement:
    return ShapeMeasurement(shape="4096", target=get_target("sm_90"), ncu=dict(ncu))


def test_occupancy() -> None:
    obj = Occupancy()
    assert (obj.name, obj.direction, obj.stage, obj.unit) == ("occupancy", "max", "ncu", "%")
    assert obj.required_ncu_metrics == (OCC,)
    assert obj.value(measurement(**{OCC: 81.34})) == 81.34
    with pytest.raises(ValueError, match="occupancy.*shape '4096'"):
        obj.value(measurement())
    with pytest.raises(ValueError, match="takes no parameters"):
        Occupancy(metric="x")


def test_l1tex() -> None:
    obj = L1texThroughput()
    assert (obj.name, obj.effective_direction, obj.stage) == ("l1tex_throughput", "max", "ncu")
    assert obj.required_ncu_metrics == (L1,)
    assert obj.value(measurement(**{L1: 41.69})) == 41.69
    assert obj.column("4096", multi_shape=True) == "l1tex_throughput@4096"


def test_ncu_metric_from_catalog() -> None:
    obj = NcuMetric(metric="gpu__time_duration.sum")
    assert obj.effective_direction == "min" and obj.stage == "ncu"
    assert obj.required_ncu_metrics == ("gpu__time_duration.sum",)
    assert obj.value(measurement(**{"gpu__time_duration.sum": 31328.0})) == 31328.0
    assert obj.column("4096", multi_shape=False) == "ncu_metric:duration"
    assert obj.column("4096", multi_shape=True) == "ncu_metric:duration@4096"
    alias = NcuMetric(metric="dram_bytes", direction="max")
    assert alias.required_ncu_metrics == ("dram__bytes.sum",) and alias.effective_direction == "max"


def test_ncu_metric_unknown_needs_direction() -> None:
    with pytest.raises(ValueError, match="'direction'"):
        NcuMetric(metric="sm__inst_executed.sum")
    obj = NcuMetric(metric="sm__inst_executed.sum", direction="min")
    assert obj.column("s", multi_shape=False) == "ncu_metric:sm__inst_executed.sum"
    with pytest.raises(ValueError, match="ncu_metric:sm__inst_executed.sum"):
        obj.value(measurement())


def test_ncu_metric_parameter_errors() -> None:
    with pytest.raises(ValueError, match="'metric' is required"):
        NcuMetric()
    with pytest.raises(ValueError, match="min' or 'max"):
        NcuMetric(metric="duration", direction="down")
    with pytest.raises(ValueError, match="unknown parameter"):
        NcuMetric(metric="duration", scale=2)


def test_registry_table() -> None:
    assert set(NCU_OBJECTIVES) == {"occupancy", "l1tex_throughput", "ncu_metric"}
