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
        """An existing run directory, checked: a wrong path or a broken run.json is a one-line UserError."""
        path = Path(path)
        if not path.exists():
            raise UserError(f"{path}: no such run directory")
        if not path.is_dir():
            raise UserError(f"{path}: not a directory; give the run directory written by 'paretotune run'")
        run = cls(path)
        try:
            run.meta()
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}/run.json: not valid JSON (line {exc.lineno})") from None
        return run

    # -- creation -------------------------------------------------------------------------------------------
    def create(self, campaign_text: str, meta: dict[str, Any]) -> None:
        """Create the directory (or reuse an empty one) and write campaign copy and metadata."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            (self.path / "acf").mkdir(exist_ok=True)
            probe = self.path / ".write-test"
            probe.write_text("ok")
            probe.unlink()
        except OSError as exc:
            raise UserError(f"{self.path}: run directory is not writable ({exc.strerror})") from None
        if (self.path / RESULTS).exists() and (self.path / RESULTS).stat().st_size > 0:
            raise UserError(f"{self.path}: already holds a run; use 'paretotune resume {self.path}' or another --out")
        (self.path / CAMPAIGN).write_text(campaign_text)
        self.write_meta(meta)

    def write_meta(self, meta: dict[str, Any]) -> None:
        tmp = self.path / (META + ".tmp")
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=True, default=str))
        os.replace(tmp, self.path / META)

    # -- reading --------------------------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        try:
            return json.loads((self.path / META).read_text())
        except FileNotFoundError:
            raise UserError(f"{self.path}: not a paretotune run directory (no {META})") from None

    def objective_columns(self) -> list[ObjectiveColumn]:
        """The optimized columns with their directions; a missing, malformed or empty list is a UserError."""
        try:
            columns = [ObjectiveColumn(**c) for c in self.meta()["objective_columns"]]
        except (KeyError, TypeError) as exc:
            raise UserError(f"{self.path}/run.json: bad or missing 'objective_columns' ({exc})") from None
        if not columns:
            raise UserError(f"{self.path}/run.json: 'objective_columns' is empty")
        return columns

    def directions(self) -> dict[str, Direction]:
        """Objective column -> 'min' | 'max', the form pareto/ functions take."""
        return {c.column: c.direction for c in self.objective_columns()}

    def campaign_text(self) -> str:
        return (self.path / CAMPAIGN).read_text()

    def acf_path(self, sha: str) -> Path:
        return self.path / "acf" / f"{sha}.acf"

    def results(self) -> pd.DataFrame:
        return read_results(self.path)

    def records(self) -> list[TrialRecord]:
        cols = [c.column for c in self.objective_columns()]
        return [TrialRecord.from_row(row, cols) for row in _read_rows(self.path / RESULTS)]

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
        fh = open(self.path / LOCK, "a+", encoding="utf-8")  # noqa: SIM115 - held open for the whole run
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


def _read_rows(path: Path) -> list[dict[str, Any]]:
    """Parse results.jsonl, skipping a partial last line left by a crash mid-write."""
    if not path.exists():
        return []
    rows = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break  # torn final write
            raise UserError(f"{path}:{i + 1}: corrupt results line") from None
    return rows


def read_results(run: Path | str) -> pd.DataFrame:
    """The run's results table: one row per evaluated candidate, one column per objective."""
    rows = _read_rows(Path(run) / RESULTS)
    return pd.DataFrame(rows)
