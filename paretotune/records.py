"""Immutable records that flow through a campaign: candidates in, trial records out.

A failed candidate is data (``status="failed"`` with a reason), never an exception that stops the search.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["ok", "failed"]
Direction = Literal["min", "max"]

# How a shape is timed, as a GPU measurement notes it in a record's ``extra`` per shape: the clock, why it was
# chosen, the arguments restored before each round, the GPU activities of one call, and the kernel authors' own
# method where it differs. The same for every candidate of a run, so run.json keeps it once per shape (the
# baseline's under ``measurement``; each ``timing`` entry's ``clocks``, the first measured record's).
HOW_TIMED = ("timing", "timing_source", "restored_inputs", "gpu_work", "authors_timing")


@dataclass(frozen=True)
class Shape:
    """One input shape of a campaign; ``params`` go to the kernel's argument factory."""

    label: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Candidate:
    """A point of the joint space: a kernel config plus an ACF (``acf=None`` means compiler defaults)."""

    candidate_id: int
    generation: int
    config: dict[str, Any]
    acf: str | None = None  # sha256 of the ACF bytes; the file is <run>/acf/<acf>.acf
    is_baseline: bool = False
    engine_id: str | None = None  # the search engine's own id, for tell()
    twin_of: int | None = None  # a no-ACF twin: the id of the ACF candidate it was added for


@dataclass(frozen=True)
class TrialRecord:
    """The result of evaluating one candidate; one row of the run's results table."""

    candidate_id: int
    generation: int
    config: dict[str, Any]
    acf: str | None
    is_baseline: bool
    status: Status
    values: dict[str, float] = field(default_factory=dict)  # objective column -> value
    error: str = ""
    compile_s: float = 0.0
    measure_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)  # raw per-shape stats, worker info, ...
    # where the time went, in seconds summed over shapes (ptx_s, ptxas_s, precompile_s, gpu_build_s, gpu_time_s):
    # kept apart from ``extra`` because timings differ between runs while measured values must not
    stages: dict[str, float] = field(default_factory=dict)

    def to_row(self) -> dict[str, Any]:
        """Flatten to one table row: objective columns become top-level columns."""
        row = asdict(self)
        values = row.pop("values")
        row["config"] = json.dumps(self.config, sort_keys=True)
        row["acf"] = self.acf or ""
        row["extra"] = json.dumps(self.extra, sort_keys=True, default=str)
        row["stages"] = json.dumps({k: round(v, 4) for k, v in self.stages.items()}, sort_keys=True)
        row.update(values)
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any], objective_columns: list[str]) -> TrialRecord:
        """Inverse of :meth:`to_row` (used by resume and by tests)."""
        return cls(
            candidate_id=int(row["candidate_id"]),
            generation=int(row["generation"]),
            config=json.loads(row["config"]),
            acf=row["acf"] or None,
            is_baseline=bool(row["is_baseline"]),
            status=row["status"],
            values={c: float(row[c]) for c in objective_columns if c in row and row[c] is not None},
            error=row.get("error", ""),
            compile_s=float(row.get("compile_s", 0.0)),
            measure_s=float(row.get("measure_s", 0.0)),
            extra=json.loads(row.get("extra") or "{}"),
            stages=json.loads(row.get("stages") or "{}"),
        )


def baseline_phrase(sources: dict[str, str], labels: list[str]) -> str:
    """What messages, pins and reports call the baseline's config, from where each shape's came from (``run.json``'s
    ``kernel.baseline_sources``): one source for all shapes is named, else "each shape's own baseline config"."""
    found = {sources.get(label) for label in labels}
    if len(found) == 1 and None not in found:
        return str(found.pop())
    return "each shape's own baseline config" if found - {None} else "the kernel's default config"


def work_text(work: Sequence[str]) -> str | None:
    """'each timed call runs 3 GPU activities, all of them timed: ...' where a call runs more than one (None
    where it is one: the kernel's own launch, as a reader assumes)."""
    if len(work) < 2:
        return None
    shown = ", ".join(name[:48] for name in work[:4]) + (", ..." if len(work) > 4 else "")
    return f"each timed call runs {len(work)} GPU activities, all of them timed: {shown}"
