"""Shared builders: a results table in memory, and a run directory on disk (``write_run``: the report tests'
builder, one for all tests)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pytest

from paretotune.records import TrialRecord
from report.conftest import write_run  # noqa: F401 - re-exported for the tests that import it from here


def results_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """A results table as read_results returns it, from {candidate_id, values, status?, is_baseline?} dicts."""
    records = [
        TrialRecord(candidate_id=r["candidate_id"], generation=r.get("generation", 0), config=r.get("config", {}),
                    acf=r.get("acf"), is_baseline=r.get("is_baseline", False), status=r.get("status", "ok"),
                    values=r["values"], error=r.get("error", ""))
        for r in rows
    ]
    return pd.DataFrame([rec.to_row() for rec in records])


@pytest.fixture
def two_shape_columns() -> list[dict[str, str]]:
    return [
        {"column": "runtime@a", "direction": "min", "objective": "runtime", "shape": "a"},
        {"column": "occupancy@a", "direction": "max", "objective": "occupancy", "shape": "a"},
        {"column": "runtime@b", "direction": "min", "objective": "runtime", "shape": "b"},
        {"column": "occupancy@b", "direction": "max", "objective": "occupancy", "shape": "b"},
    ]
