"""Shared builders: a results table in memory, and a run directory on disk."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from paretotune.records import TrialRecord
from paretotune.store import RunDir


def results_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """A results table as read_results returns it, from {candidate_id, values, status?, is_baseline?} dicts."""
    records = [
        TrialRecord(candidate_id=r["candidate_id"], generation=r.get("generation", 0), config=r.get("config", {}),
                    acf=r.get("acf"), is_baseline=r.get("is_baseline", False), status=r.get("status", "ok"),
                    values=r["values"], error=r.get("error", ""))
        for r in rows
    ]
    return pd.DataFrame([rec.to_row() for rec in records])


def write_run(path: Path, columns: Sequence[dict[str, str]], rows: Sequence[dict[str, Any]]) -> Path:
    """A run directory with run.json (objective_columns) and results.jsonl, written through RunDir."""
    run = RunDir(path)
    run.create("kernel: demo\n", {"objective_columns": list(columns), "seed": 0})
    for r in rows:
        run.append(TrialRecord(candidate_id=r["candidate_id"], generation=r.get("generation", 0),
                               config=r.get("config", {}), acf=r.get("acf"), is_baseline=r.get("is_baseline", False),
                               status=r.get("status", "ok"), values=r["values"], error=r.get("error", "")))
    return path


@pytest.fixture
def two_shape_columns() -> list[dict[str, str]]:
    return [
        {"column": "runtime@a", "direction": "min", "objective": "runtime", "shape": "a"},
        {"column": "occupancy@a", "direction": "max", "objective": "occupancy", "shape": "a"},
        {"column": "runtime@b", "direction": "min", "objective": "runtime", "shape": "b"},
        {"column": "occupancy@b", "direction": "max", "objective": "occupancy", "shape": "b"},
    ]
