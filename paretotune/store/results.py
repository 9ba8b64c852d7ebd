"""results.jsonl: the line format of a stored TrialRecord, its checks, and the parser.

Every reader of a run (resume, front, report, export, validate, the service) reads it through
:class:`paretotune.store.run_dir.RunDir`, which parses it here: a damaged line (not JSON, not a record, wrong
field types, a candidate stored twice) is one UserError naming the file and line. A torn last line (a crash
mid-append: a record's beginning without its newline) is told apart from damage and returned as such;
what a reader does with it is ``RunDir``'s rule, the same for all. Appending stays with ``RunDir``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class Rows:
    """The checked records of results.jsonl, and the number of a torn last line left out of them (or None)."""

    rows: list[dict[str, Any]]
    torn_line: int | None = None


def parse_rows(path: Path) -> Rows:
    """Parse and check results.jsonl (a missing file has no rows). A last line without its newline that begins
    a record (``{``) and does not parse is a torn write: left out and reported in :attr:`Rows.torn_line`.
    Damage (not a file, not UTF-8, a blank line, a line that is not a record, wrong types, a candidate stored
    twice, any other line that is not JSON) is a UserError naming the file and line."""
    if not path.exists() and not path.is_symlink():
        return Rows([])
    lines = text_file(path, "missing").split("\n")  # the last item follows the last newline: '' unless cut
    rows: list[dict[str, Any]] = []
    seen: dict[int, int] = {}
    torn = None
    for i, line in enumerate(lines):
        if i == len(lines) - 1 and not line:
            break  # what follows the last newline: nothing, unless the last write was cut short
        if not line.strip():  # the writer never writes one: an edit, perhaps one that removed a record
            raise UserError(f"{path}:{i + 1}: blank line (paretotune writes one record per line and never a blank "
                            "one); was the file edited?")
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            if i == len(lines) - 1 and line.lstrip().startswith("{"):
                torn = i + 1  # the beginning of a record whose write was cut short
                break
            raise UserError(f"{path}:{i + 1}: corrupt results line (not JSON)") from None
        _check_row(row, f"{path}:{i + 1}")
        cid = row["candidate_id"]
        if cid in seen:
            raise UserError(f"{path}: candidate {cid} is stored twice (lines {seen[cid]} and {i + 1}); the file "
                            "was edited or two runs wrote into one directory")
        seen[cid] = i + 1
        rows.append(row)
    return Rows(rows, torn)
