"""One directory per run, readable with one pandas call.

Layout::

    <run>/campaign.yaml     copy of the campaign file as given
    <run>/run.json          objective columns with directions, toolchain, target, seed
    <run>/results.jsonl     one TrialRecord per line, appended and fsynced
    <run>/acf/<sha>.acf     every ACF evaluated, named by content hash (+ <sha>.json: ptxas version, arch)
    <run>/checkpoint.json   the loop's last commit point (see store/checkpoint.py) + engine-<seq>.ckpt
    <run>/.lock             flock held by the one process running or resuming the run

Why JSON lines and not SQLite: a record is written once and never updated, so an append-only file with
``fsync`` after each line is crash-safe (a SIGKILL can only cut the last line short, and the reader skips a
partial last line), diff-able, and greppable; ``pandas.read_json(lines=True)`` reads it directly. Before a
resumed run appends, :meth:`RunDir.recover` cuts a torn last line off (otherwise the next record would be
glued to it and corrupt a line in the middle of the file).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from paretotune.errors import UserError
from paretotune.records import Direction, TrialRecord
from paretotune.text_file import read_text as text_file

RESULTS = "results.jsonl"
LOCK = ".lock"
META = "run.json"
CAMPAIGN = "campaign.yaml"


@dataclass(frozen=True)
class ObjectiveColumn:
    """One column of the results table that pareto/ optimizes, with its direction."""

    column: str
    direction: Direction
    objective: str  # registry name of the objective that produced it
    shape: str  # shape label the value was measured on


class RunDir:
    """Reads and writes one run directory. Creating it checks that it is writable."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    @classmethod
    def open(cls, path: Path | str) -> RunDir:
        """An existing run directory, checked as every reader needs it: run.json, its objective columns, the
        campaign copy and every results line (types, duplicates). Damage is a one-line UserError naming the
        file, never a traceback; nothing is written."""
        path = Path(path)
        if not path.exists():
            raise UserError(f"{path}: no such run directory")
        if not path.is_dir():
            raise UserError(f"{path}: not a directory; give the run directory written by 'paretotune run'")
        run = cls(path)
        run.objective_columns()
        run.campaign_text()
        run.results()
        return run

    # -- creation -------------------------------------------------------------------------------------------
    def create(self, campaign_text: str, meta: dict[str, Any]) -> None:
        """Create the directory (or use an empty one) and write campaign copy and metadata, under the lock."""
        with self.claim():
            self.write_new(campaign_text, meta)

    @contextlib.contextmanager
    def claim(self) -> Iterator[bool]:
        """Make (or take an empty) directory and hold its lock before anything is written; yields whether this
        call made the directory. A folder with files (another run, running or not, or a user's folder) is
        refused without touching it."""
        existed = self.path.exists()
        if existed and not self.path.is_dir():
            raise UserError(f"{self.path}: exists and is not a directory; give another --out")
        self._refuse_if_used()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"{self.path}: run directory is not writable ({exc.strerror})") from None
        with self.lock():
            self._refuse_if_used()  # another process may have claimed it between the check and the lock
            yield not existed

    def _refuse_if_used(self) -> None:
        if not self.path.is_dir():
            return
        try:
            # left by a start killed before it wrote anything: the lock file and an empty acf/ folder
            names = sorted(p.name for p in self.path.iterdir()
                           if p.name != LOCK and not (p.name == "acf" and p.is_dir() and not any(p.iterdir())))
        except OSError as exc:
            raise UserError(f"{self.path}: cannot list the folder ({exc.strerror})") from None
        if META in names or RESULTS in names:
            raise UserError(f"{self.path}: already holds a run; use 'paretotune resume {self.path}' or another --out")
        if names:
            raise UserError(f"{self.path}: not empty ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}); "
                            "a run goes into a new or empty folder: give another --out")

    def write_new(self, campaign_text: str, meta: dict[str, Any]) -> None:
        """Write the campaign copy and run.json into a claimed directory."""
        try:
            (self.path / "acf").mkdir(exist_ok=True)
            (self.path / CAMPAIGN).write_text(campaign_text)
            self.write_meta(meta)
        except OSError as exc:
            raise UserError(f"{self.path}: cannot write the run directory ({exc.strerror})") from None

    def discard(self, made_here: bool) -> None:
        """Remove what a failed start wrote (the directory too if this invocation made it); the lock file
        stays while held and goes with the directory."""
        import shutil

        if made_here:
            shutil.rmtree(self.path, ignore_errors=True)
            return
        for child in self.path.iterdir():
            if child.name == LOCK:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)

    def write_meta(self, meta: dict[str, Any]) -> None:
        tmp = self.path / (META + ".tmp")
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=True, default=str))
        os.replace(tmp, self.path / META)

    # -- reading --------------------------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        """run.json as a dict; missing, unreadable, not JSON or wrongly typed is a one-line UserError."""
        where = self.path / META
        data = json_file(where, "not a paretotune run directory (no run.json)")
        if not isinstance(data, dict):
            raise UserError(f"{where}: not a JSON object")
        for key, kind in (("seed", int), ("campaign_path", str), ("campaign", str), ("target", str)):
            if key in data and (not isinstance(data[key], kind) or isinstance(data[key], bool)):
                raise UserError(f"{where}: '{key}' must be {'an integer' if kind is int else 'a string'}")
        return data

    def objective_columns(self) -> list[ObjectiveColumn]:
        """The optimized columns with their directions; a missing, malformed or empty list is a UserError."""
        raw = self.meta().get("objective_columns")
        where = f"{self.path / META}: objective_columns"
        if not isinstance(raw, list):
            raise UserError(f"{where}: missing or not a list")
        if not raw:
            raise UserError(f"{self.path}/run.json: 'objective_columns' is empty")
        columns = []
        for i, c in enumerate(raw):
            if not isinstance(c, dict) or set(c) != {"column", "direction", "objective", "shape"}:
                raise UserError(f"{where}[{i}]: must be an object with column, direction, objective and shape")
            if not all(isinstance(v, str) and v for v in c.values()) or c["direction"] not in ("min", "max"):
                raise UserError(f"{where}[{i}]: fields must be non-empty strings, direction 'min' or 'max'")
            columns.append(ObjectiveColumn(**c))
        names = [c.column for c in columns]
        if len(set(names)) != len(names):
            raise UserError(f"{where}: a column is listed twice")
        return columns

    def directions(self) -> dict[str, Direction]:
        """Objective column -> 'min' | 'max', the form pareto/ functions take."""
        return {c.column: c.direction for c in self.objective_columns()}

    def campaign_text(self) -> str:
        """The campaign copy; missing, not a file or not UTF-8 is a one-line UserError."""
        return text_file(self.path / CAMPAIGN, "missing campaign copy (campaign.yaml)")

    def acf_path(self, sha: str) -> Path:
        return self.path / "acf" / f"{sha}.acf"

    def results(self) -> pd.DataFrame:
        rows = self._checked_rows()
        return pd.DataFrame(rows)

    def records(self) -> list[TrialRecord]:
        cols = [c.column for c in self.objective_columns()]
        return [TrialRecord.from_row(row, cols) for row in self._checked_rows()]

    def _checked_rows(self) -> list[dict[str, Any]]:
        """Rows of results.jsonl, with the objective columns checked to be numbers (or null)."""
        rows = _read_rows(self.path / RESULTS)
        cols = [c.column for c in self.objective_columns()]
        for i, row in enumerate(rows):
            for c in cols:
                v = row.get(c)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    raise UserError(f"{self.path / RESULTS}: candidate {row['candidate_id']} (record {i + 1}): "
                                    f"'{c}' must be a number or null")
        return rows

    def baseline(self) -> TrialRecord | None:
        """The stored baseline record, if any (a resumed run does not measure it again)."""
        if not (self.path / RESULTS).exists():
            return None
        return next((r for r in self.records() if r.is_baseline), None)

    # -- one writer at a time --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run for one process: a second ``run``/``resume`` of it would store candidates twice.

        An flock dies with its process, so a SIGKILL leaves no stale lock behind.
        """
        try:
            fh = open(self.path / LOCK, "a+", encoding="utf-8")  # noqa: SIM115 - held open for the whole run
        except OSError as exc:
            raise UserError(f"{self.path}: cannot take the run's lock ({exc.strerror}); is the folder "
                            "writable?") from None
        try:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip()
                raise UserError(f"{self.path}: in use by another paretotune process"
                                f"{f' (pid {holder})' if holder else ''}") from None
            fh.seek(0)
            fh.truncate()
            fh.write(str(os.getpid()))
            fh.flush()
            yield
        finally:
            fh.close()

    # -- appending ------------------------------------------------------------------------------------------
    def recover(self) -> int:
        """Make results.jsonl safe to append to after a crash; return the number of torn bytes dropped.

        A final line without its newline is completed if it parses (the write got that far) and cut off if not.
        """
        path = self.path / RESULTS
        if not path.exists():
            return 0
        data = path.read_bytes()
        if not data or data.endswith(b"\n"):
            return 0
        cut = data.rfind(b"\n") + 1
        tail = data[cut:]
        try:
            json.loads(tail)
        except ValueError:
            with open(path, "r+b") as fh:
                fh.truncate(cut)
                fh.flush()
                os.fsync(fh.fileno())
            return len(tail)
        with open(path, "ab") as fh:
            fh.write(b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        return 0

    def append(self, record: TrialRecord) -> None:
        """Append one record durably: a crash after this returns cannot lose it."""
        line = json.dumps(record.to_row(), sort_keys=True, allow_nan=True) + "\n"
        with open(self.path / RESULTS, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


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


def _read_rows(path: Path) -> list[dict[str, Any]]:
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


def json_file(path: Path, missing: str) -> Any:
    """A run file's JSON; damage is a one-line UserError."""
    try:
        return json.loads(text_file(path, missing, limit=64 << 20))
    except (json.JSONDecodeError, RecursionError) as exc:
        line = f" (line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise UserError(f"{path}: not valid JSON{line}") from None


def read_results(run: Path | str) -> pd.DataFrame:
    """The run's results table: one row per evaluated candidate, one column per objective."""
    return pd.DataFrame(_read_rows(Path(run) / RESULTS))
