"""The loop's commit point: which engine checkpoint is current, and which candidates are in flight.

Resume needs two things to agree after a crash: the search engine's own checkpoint (CompileIQ writes it; it
may hold proposals as *pending*) and the loop's bookkeeping (next candidate id, generation, the in-flight
candidates with the ids they were given). No file system writes two files atomically, so every engine
checkpoint gets a fresh name (``engine-<seq>.ckpt``, plus any sidecars the engine writes next to it) and
``checkpoint.json`` names the current one. ``checkpoint.json`` is replaced atomically
(:func:`paretotune.store.atomic.atomic_write`), so a crash leaves the previous pair or the new pair, never a mix.
Engine files no ``checkpoint.json`` names are left-overs of a crash and are deleted by the next commit.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from paretotune.errors import UserError
from paretotune.records import Candidate
from paretotune.store.atomic import atomic_write_json

CHECKPOINT = "checkpoint.json"
ENGINE_PREFIX = "engine-"
FORMAT = 1


class Saveable(Protocol):
    def save(self, path: str) -> bool: ...


@dataclass(frozen=True)
class LoopCheckpoint:
    """The loop's state at a commit point.

    ``pending`` are the candidates issued and not yet told to the engine (empty right after a tell).
    ``engine_pending`` says whether ``engine_file`` holds them as pending proposals: an engine that can only
    save between generations keeps its previous checkpoint, and resume then stores their records without
    telling them.
    """

    seq: int
    next_id: int
    evaluated: int
    generation: int
    elapsed_s: float
    engine_file: str | None
    engine_pending: bool
    pending: tuple[Candidate, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["format"] = FORMAT
        out["pending"] = [asdict(c) for c in self.pending]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LoopCheckpoint:
        if data.get("format") != FORMAT:
            raise ValueError(f"unknown checkpoint format {data.get('format')!r} (this paretotune writes {FORMAT})")
        return cls(seq=int(data["seq"]), next_id=int(data["next_id"]), evaluated=int(data["evaluated"]),
                   generation=int(data["generation"]), elapsed_s=float(data["elapsed_s"]),
                   engine_file=data["engine_file"], engine_pending=bool(data["engine_pending"]),
                   pending=tuple(Candidate(**c) for c in data["pending"]))


def read_checkpoint(run: Path) -> LoopCheckpoint | None:
    """The last committed checkpoint, or None if the run never committed one (it stopped before generation 1)."""
    path = run / CHECKPOINT
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        return LoopCheckpoint.from_json(data)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise UserError(f"{path}: unreadable loop checkpoint ({' '.join(str(exc).split())})") from None


def check_against_records(cp: LoopCheckpoint | None, rows: list[dict[str, Any]], results: Path, *,
                          live: bool = False, torn_line: int | None = None) -> None:
    """The stored records agree with the loop's last commit: every candidate the checkpoint counts as told is
    stored, none is stored that it does not know, candidate 0 is the baseline. Resume depends on it, so every
    reader refuses what resume would (an edited or truncated results file, a results file that lost its
    records). ``live``: a process is writing the run; records may be ahead of the checkpoint (appended
    before the commit that counts them), never behind it. ``cp`` is read before ``rows`` for that reason."""
    by_id = {row["candidate_id"]: row for row in rows}
    baseline = by_id.get(0)
    if baseline is not None and not baseline["is_baseline"]:
        raise UserError(f"{results}: candidate 0 is not the baseline")
    torn = f"; line {torn_line} is torn" if torn_line else ""
    if cp is None:  # stopped before the first generation was issued: at most the baseline is stored
        extra = sorted(i for i in by_id if i != 0)
        if extra and not live:
            raise UserError(f"{results}: holds candidates {extra[:5]} but the run has no "
                            f"{results.parent / CHECKPOINT}")
        return
    pending = {c.candidate_id for c in cp.pending}
    told = set(by_id) - pending - {0}
    expected = set(range(1, cp.next_id)) - pending
    missing, unknown = sorted(expected - told), sorted(told - expected)
    if missing or (unknown and not live) or baseline is None:
        raise UserError(f"{results}: does not match {results.parent / CHECKPOINT} (missing candidates "
                        f"{missing[:5]}, unknown candidates {unknown[:5]}{'' if baseline else ', no baseline'}"
                        f"{torn}); was the file edited or truncated?")
    if len(expected) != cp.evaluated:
        raise UserError(f"{results}: {len(expected)} candidates told, but {results.parent / CHECKPOINT} counts "
                        f"{cp.evaluated}")


class Checkpointer:
    """Commits (engine checkpoint, loop state) pairs into a run directory."""

    def __init__(self, run: Path) -> None:
        self.run = run
        self.last = read_checkpoint(run)
        self._warned = False
        self.engine_save_s = 0.0  # how long the last engine save took (the loop spaces out costly saves)

    def commit(self, engine: Saveable, *, next_id: int, evaluated: int, generation: int, elapsed_s: float,
               pending: tuple[Candidate, ...], save_engine: bool = True) -> LoopCheckpoint:
        """Save the engine (unless ``save_engine`` is False: then this commit counts as a save that did not
        happen, so a resume restarts the engine unless nothing was told since its last save), then the loop
        state that names it."""
        seq = (self.last.seq if self.last else 0) + 1
        name = f"{ENGINE_PREFIX}{seq:06d}.ckpt"
        try:
            saved = False
            if save_engine:
                started = time.perf_counter()
                saved = engine.save(str(self.run / name))
                self.engine_save_s = time.perf_counter() - started
        except Exception as exc:  # noqa: BLE001 - a failed engine checkpoint must not stop the campaign
            saved = False
            if not self._warned:
                print(f"paretotune: warning: the search engine could not checkpoint ({type(exc).__name__}: {exc}); "
                      "a resume will restart the engine (no evaluation is lost)", file=sys.stderr)
                self._warned = True
        if saved:
            engine_file, engine_pending = name, bool(pending)
        elif self.last is not None and self.last.engine_file and not self.last.engine_pending:
            engine_file, engine_pending = self.last.engine_file, False  # still true: nothing told since
        else:
            engine_file, engine_pending = None, False
        cp = LoopCheckpoint(seq=seq, next_id=next_id, evaluated=evaluated, generation=generation,
                            elapsed_s=elapsed_s, engine_file=engine_file, engine_pending=engine_pending,
                            pending=pending)
        atomic_write_json(self.run / CHECKPOINT, cp.to_json(), sort_keys=True, allow_nan=False)
        self.last = cp
        self._collect(engine_file)
        return cp

    def _collect(self, keep: str | None) -> None:
        """Delete engine files (and their sidecars) of earlier commits."""
        for path in self.run.glob(f"{ENGINE_PREFIX}*"):
            if keep is None or not path.name.startswith(keep):
                path.unlink(missing_ok=True)
