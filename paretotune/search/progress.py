"""Search progress stored with the run: hypervolume after each evaluation, in ``<run>/progress.csv``.

Computed after the fact from ``results.jsonl`` (the records are the truth; a table derived from them can
always be rebuilt), by :func:`paretotune.pareto.run_hypervolume_progress`: objectives divided by the baseline,
reference point 1.0 on every axis by default, so the curve starts at 0 and measures what was won over the
default compiler; columns on which every candidate agrees are left out by the rule ``front`` and the report
use (:func:`paretotune.pareto.hypervolume_columns`), so the last row is the hypervolume ``front`` prints. The
report draws the same curve from the same function (it also runs on a live run, before this file exists); the
joint-vs-sequential study reads the curve over every column (``benchmarks/bench_strategies.py``).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from paretotune.store.atomic import atomic_write
from paretotune.store.run_dir import RunDir

PROGRESS = "progress.csv"


def hypervolume_progress(run_dir: Path | str, *, ref: Sequence[float] | None = None,
                         write: bool = True) -> pd.DataFrame:
    """One row per evaluated candidate: ``evaluation, candidate_id, generation, status, is_baseline,
    hypervolume``; written to ``<run>/progress.csv`` unless ``write=False``.

    ``ref`` is the reference point in baseline-ratio space, one value per objective column (default 1.0
    everywhere); a column left out of the hypervolume drops its value.
    Raises :class:`paretotune.pareto.NoBaselineError` when the run has no successful baseline.
    """
    from paretotune.pareto import run_hypervolume_progress as progress_of

    run = RunDir(run_dir)
    results = run.results()
    frame = progress_of(results, run.directions(), ref=ref)
    by_id = results.drop_duplicates("candidate_id").set_index("candidate_id")
    for column in ("is_baseline", "generation"):  # inserted at 2 in turn: generation ends up first
        if column in by_id.columns:
            frame.insert(2, column, by_id.loc[frame["candidate_id"], column].to_numpy())
    if write:
        atomic_write(run.path / PROGRESS, frame.to_csv(index=False))
    return frame
