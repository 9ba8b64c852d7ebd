"""One directory per run, readable with one pandas call.

Layout::

    <run>/campaign.yaml     copy of the campaign file as given
    <run>/run.json          objective columns with directions, toolchain, target, seed
    <run>/results.jsonl     one TrialRecord per line, appended and fsynced
    <run>/acf/<sha>.acf     every ACF evaluated, named by content hash (+ <sha>.json: ptxas version, arch)
    <run>/checkpoint.json   the loop's last commit point (see store/checkpoint.py) + engine-<seq>.ckpt
    <run>/.lock             flock held by the one process running or resuming the run

Why JSON lines and not SQLite: a record is written once and never updated, so an append-only file with
``fsync`` after each line is crash-safe (a SIGKILL can only cut the last line short), diff-able, and
greppable; ``pandas.read_json(lines=True)`` reads it directly.

Every command reads a run through this class (:meth:`RunDir.open`, then :meth:`RunDir.results` or
:meth:`RunDir.records`), so the same damage gets the same one-line answer everywhere. A torn last line is
read as the writer's state says: while a process holds the run's lock it is still being written and is left
out; in a stopped run it is refused, naming ``paretotune resume``, which cuts it off
(:meth:`RunDir.recover`, once its checks passed) so that every reader accepts the run again. A torn line is
never dropped silently.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from paretotune.errors import UserError
from paretotune.records import Direction, TrialRecord
from paretotune.store.atomic import atomic_write_json
from paretotune.store.checkpoint import check_against_records, read_checkpoint
from paretotune.store.files import json_file, text_file
from paretotune.store.results import RESULTS, parse_rows

LOCK = ".lock"
META = "run.json"
CAMPAIGN = "campaign.yaml"
CAMPAIGN_SHA256 = "campaign_sha256"  # run.json's key: the hash of campaign.yaml as the run wrote it


def text_sha256(text: str) -> str:
    """The hash run.json records of the campaign copy (of its UTF-8 bytes, as written)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ObjectiveColumn:
    """One column of the results table that pareto/ optimizes, with its direction."""

    column: str
    direction: Direction
    objective: str  # registry name of the objective that produced it
    shape: str  # shape label the value was measured on


LOCK_TRIES = 20  # a reader's probe of the lock (in_use) holds it for microseconds: a writer retries


class RunDir:
    """Reads and writes one run directory. Creating it checks that it is writable. ``repairing``: the reader
    is ``resume``, which may cut a torn last line off (:meth:`recover`), so it reads past one."""

    def __init__(self, path: Path | str, *, repairing: bool = False) -> None:
        self.path = Path(path)
        self.repairing = repairing

    @classmethod
    def open(cls, path: Path | str, *, repairing: bool = False) -> RunDir:
        """An existing run directory, checked as every reader needs it: run.json, its objective columns, the
        campaign copy's text, every results line (types, duplicates, finite objective values, a torn last
        line) and the loop checkpoint, against the records. Damage is a one-line UserError naming the file,
        never a traceback; nothing is written. The campaign copy's fields and the checks that need the
        campaign (the integrity rule of :mod:`paretotune.front.integrity`: the copy against its hash, records
        against their own measurements and each other, ACF files against their names) are
        :func:`paretotune.front.open_run`'s, the reader every command, the service and the API call."""
        path = Path(path)
        if not path.exists():
            raise UserError(f"{path}: no such run directory")
        if not path.is_dir():
            raise UserError(f"{path}: not a directory; give the run directory written by 'paretotune run'")
        run = cls(path, repairing=repairing)
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
        """Write the campaign copy and run.json into a claimed directory; run.json records the copy's hash
        (``campaign_sha256``), which every reader checks the copy against (:mod:`paretotune.front.integrity`)."""
        try:
            (self.path / "acf").mkdir(exist_ok=True)
            (self.path / CAMPAIGN).write_bytes(campaign_text.encode("utf-8"))  # as hashed: no newline translation
            self.write_meta({**meta, CAMPAIGN_SHA256: text_sha256(campaign_text)})
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
        atomic_write_json(self.path / META, meta, indent=2, sort_keys=True, default=str)

    # -- reading --------------------------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        """run.json as a dict; missing, unreadable, not JSON or wrongly typed is a one-line UserError."""
        where = self.path / META
        data = json_file(where, "not a paretotune run directory (no run.json)")
        if not isinstance(data, dict):
            raise UserError(f"{where}: not a JSON object")
        for key, kind in (("seed", int), ("campaign_path", str), ("campaign", str), ("target", str),
                          (CAMPAIGN_SHA256, str)):
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
        """The results table: one row per stored candidate, one column per field and objective."""
        return pd.DataFrame(self._checked_rows())

    def records(self) -> list[TrialRecord]:
        cols = [c.column for c in self.objective_columns()]
        return [TrialRecord.from_row(row, cols) for row in self._checked_rows()]

    def rows(self) -> list[dict[str, Any]]:
        """The results lines as parsed and checked (what :meth:`results` tabulates), in file order."""
        return self._checked_rows()

    def _checked_rows(self) -> list[dict[str, Any]]:
        """Rows of results.jsonl: objective values finite numbers (or null), the records as the checkpoint
        counts them, and a torn last line refused unless a writer holds the run or the reader repairs it."""
        where = self.path / RESULTS
        cp = read_checkpoint(self.path)  # before the records: a live run's records only run ahead of it
        parsed = parse_rows(where)
        cols = [c.column for c in self.objective_columns()]
        for i, row in enumerate(parsed.rows):
            for c in cols:
                v = row.get(c)
                if v is None:
                    continue
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                    raise UserError(f"{where}: candidate {row['candidate_id']} (record {i + 1}): "
                                    f"'{c}' must be a finite number or null (got {v!r})")
        live = self.in_use()
        check_against_records(cp, parsed.rows, where, live=live, torn_line=parsed.torn_line)
        if parsed.torn_line is not None and not (live or self.repairing):
            raise UserError(f"{where}:{parsed.torn_line}: the last line is torn (the run stopped while writing "
                            f"it); 'paretotune resume {self.path}' repairs it")
        return parsed.rows

    def baseline(self) -> TrialRecord | None:
        """The stored baseline record, if any (a resumed run does not measure it again)."""
        if not (self.path / RESULTS).exists():
            return None
        return next((r for r in self.records() if r.is_baseline), None)

    # -- one writer at a time --------------------------------------------------------------------------------
    def in_use(self) -> bool:
        """Whether a process holds the run's lock (runs or resumes it, this one included): its last line may
        be mid-write. Asked by taking a shared lock for an instant; :meth:`lock` retries past such a probe."""
        try:
            fd = os.open(self.path / LOCK, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            os.close(fd)
        return False

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
            for attempt in range(LOCK_TRIES):
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if attempt + 1 < LOCK_TRIES:
                        time.sleep(0.01)  # a reader asking in_use() holds it for an instant
                        continue
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
        """Append one record durably: a crash after this returns cannot lose it. A non-finite number is never
        written (the loop records a non-finite objective value as a failure); one here is a ValueError."""
        line = json.dumps(record.to_row(), sort_keys=True, allow_nan=False) + "\n"
        with open(self.path / RESULTS, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def read_results(run: Path | str) -> pd.DataFrame:
    """The run's results table as :meth:`RunDir.results` reads it (the checks included)."""
    return RunDir(run).results()
