"""results.jsonl: the line format of a stored TrialRecord, its checks, and the reader.

Every reader of a run (resume, front, report, export, the service) goes through :func:`read_rows`, so a
damaged line (wrong field type, a candidate stored twice) is one UserError naming the file and line, and a
torn last line (a SIGKILL mid-append) is skipped. Appending stays with :class:`paretotune.store.run_dir.RunDir`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from paretotune.errors import UserError
from paretotune.store.files import text_file

RESULTS = "results.jsonl"

# field -> (accepted types, description) of every results line; see TrialRecord.to_row
_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "candidate_id": ((int,), "an integer"),
    "generation": ((int,), "an integer"),
    "is_baseline": ((bool,), "true or false"),
    "status": ((str,), "'ok' or 'failed'"),
    "config": ((str,), "a JSON object as text"),
    "acf": ((str,), "a string"),
}
_OPTIONAL: dict[str, tuple[tuple[type, ...], str]] = {
    "error": ((str,), "a string"),
    "compile_s": ((int, float), "a number"),
    "measure_s": ((int, float), "a number"),
    "extra": ((str,), "a JSON object as text"),
    "stages": ((str,), "a JSON object as text"),
}


def _check_row(row: Any, where: str) -> None:
    """One results line: required and optional fields with their types, status, and the JSON-object texts."""
    if not isinstance(row, dict):
        raise UserError(f"{where}: not a JSON object (a results line is one record)")
    for table, required in ((_FIELDS, True), (_OPTIONAL, False)):
        for key, (types, what) in table.items():
            if key not in row:
                if required:
                    raise UserError(f"{where}: missing field '{key}'")
                continue
            v = row[key]
            if v is None and not required:
                continue
            if not isinstance(v, types) or (bool not in types and isinstance(v, bool)):
                raise UserError(f"{where}: '{key}' must be {what}")
    if row["status"] not in ("ok", "failed"):
        raise UserError(f"{where}: 'status' must be 'ok' or 'failed'")
    if row["candidate_id"] < 0:
        raise UserError(f"{where}: 'candidate_id' must not be negative")
    for key in ("config", "extra", "stages"):
        if row.get(key):
            try:
                ok = isinstance(json.loads(row[key]), dict)
            except ValueError:
                ok = False
            if not ok:
                raise UserError(f"{where}: '{key}' must be a JSON object as text")


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Parse and check results.jsonl, skipping a partial last line left by a crash mid-write. Damage (not a
    file, not UTF-8, a line that is not a record, wrong types, a candidate stored twice) is a UserError."""
    if not path.exists() and not path.is_symlink():
        return []
    lines = text_file(path, "missing").splitlines()
    rows: list[dict[str, Any]] = []
    seen: dict[int, int] = {}
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            if i == len(lines) - 1:
                break  # torn final write
            raise UserError(f"{path}:{i + 1}: corrupt results line") from None
        _check_row(row, f"{path}:{i + 1}")
        cid = row["candidate_id"]
        if cid in seen:
            raise UserError(f"{path}: candidate {cid} is stored twice (lines {seen[cid]} and {i + 1}); the file "
                            "was edited or two runs wrote into one directory")
        seen[cid] = i + 1
        rows.append(row)
    return rows


def read_results(run: Path | str) -> pd.DataFrame:
    """The run's results table: one row per evaluated candidate, one column per objective."""
    return pd.DataFrame(read_rows(Path(run) / RESULTS))
