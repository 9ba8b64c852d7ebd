"""The integrity rule every reader of a run directory applies (front, export, report, validate, ship, resume,
the service and the API, all through :func:`paretotune.front.open_run`), so the same damage gets the same answer.

A run directory is only written by the run that owns it; anything else in it is an edit, and an edit that
makes the folder lie about what was measured must not reach a front, an export or a shipped file. The rule:

Errors (one line naming the file, exit code 2; nothing is written):

- the file checks of :meth:`paretotune.store.run_dir.RunDir.open` (run.json, each results line, a blank
  line, a candidate stored twice, the records against the loop checkpoint, a torn last line);
- ``campaign.yaml`` differs from the campaign the run was made with: its hash is not run.json's
  ``campaign_sha256`` (``front`` and ``export`` would rank by objectives the run did not measure);
- a record's objective value differs from the value its own measurement gives (``extra[<shape>]``: the
  build's counts, runtime, ncu metrics, computed again by the objective): the stored number was edited; so
  does an objective column's direction in run.json from its objective's;
- the records disagree with each other: a candidate other than 0 claims to be the baseline, a no-ACF twin
  names no stored candidate, or has an ACF, or another config than the candidate it was added for;
- an ACF file's content does not hash to its name (``acf/<sha256>.acf``), or a record names an ACF by
  anything but a sha256: a rebuild would apply other controls than the ones measured.

Warnings (one line on stderr, once per process; the run is read):

- run.json has no ``campaign_sha256``: a run made before this check; the copy is then checked against
  run.json's objective columns only (an error where its objectives or shapes give others);
- ACF files that records name are missing: the numbers stand as measured, but those candidates cannot be
  rebuilt from this folder (``validate``, ``ship`` and ``resume`` then refuse where they need one).

An objective whose inputs a record does not keep (``compile_time``'s wall time, an older record's layout) is
not computed again; the check never guesses.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from dataclasses import dataclass
from typing import Any

from paretotune.errors import UserError
from paretotune.pareto.attribution import TWIN_OF
from paretotune.store import RunDir
from paretotune.store.results import RESULTS
from paretotune.store.run_dir import CAMPAIGN, CAMPAIGN_SHA256, META, ObjectiveColumn, text_sha256
from paretotune.text_file import not_a_file

ACF_NAME = re.compile(r"^[0-9a-f]{64}$")
MAX_ACF_BYTES = 16 << 20  # CompileIQ's ACFs are a few KiB
_warned: set[str] = set()


def warn_once(message: str) -> None:
    """``paretotune: warning: <message>`` on stderr, once per process (the service reads a run many times)."""
    if message not in _warned:
        _warned.add(message)
        print(f"paretotune: warning: {message}", file=sys.stderr)


@dataclass(frozen=True)
class Declared:
    """What a run's campaign copy declares that its records must agree with (the reader takes it from the
    parsed copy): its shapes' labels, its objectives (name and parameters) and its target."""

    shapes: tuple[str, ...]
    objectives: tuple[tuple[str, dict[str, Any]], ...]
    target: str


def check_run(run: RunDir, declared: Declared, text: str) -> None:
    """Apply the rule to a run whose files :meth:`RunDir.open` checked and whose campaign copy (``text``)
    declares ``declared``: raise the first error, print the warnings."""
    check_campaign_copy(run, declared, text)
    rows = run.rows()
    check_records(run, rows)
    check_values(run, declared, rows)
    check_acf_files(run, rows)


def check_campaign_copy(run: RunDir, declared: Declared, text: str) -> None:
    """The copy against run.json's hash of it; a run without the hash (made before it was recorded): against
    run.json's objective columns, which the campaign's objectives and shapes give."""
    recorded = run.meta().get(CAMPAIGN_SHA256)
    if recorded is None:
        warn_once(f"{run.path / META}: no {CAMPAIGN_SHA256} (a run made by an earlier paretotune), so "
                  f"{CAMPAIGN} is checked against the run's objective columns only")
        multi = len(declared.shapes) > 1
        expected = [o.column(label, multi) for label in declared.shapes for o in _instances(declared)]
        stored = [c.column for c in run.objective_columns()]
        if stored != expected:
            raise UserError(f"{run.path / CAMPAIGN}: its objectives and shapes give the columns {expected}, but the "
                            f"run stored {stored} (run.json); was it edited?")
        return
    if text_sha256(text) != recorded:
        raise UserError(f"{run.path / CAMPAIGN}: differs from the campaign this run was made with (its hash is not "
                        f"run.json's {CAMPAIGN_SHA256}); was it edited? Restore it, or start a new run of the "
                        "edited campaign")


def check_records(run: RunDir, rows: list[dict[str, Any]]) -> None:
    """The records against each other: one baseline (candidate 0), twins that match what they were added for."""
    where = run.path / RESULTS
    by_id = {row["candidate_id"]: row for row in rows}
    for row in rows:
        cid = row["candidate_id"]
        if row["is_baseline"] and cid != 0:
            raise UserError(f"{where}: candidate {cid} claims to be the baseline (only candidate 0 is); "
                            "was the file edited?")
        twin_of = _extra(row).get(TWIN_OF)
        if twin_of is None:
            continue
        of = by_id.get(twin_of) if isinstance(twin_of, int) and not isinstance(twin_of, bool) else None
        problem = ("names no stored candidate" if of is None else
                   "has an ACF" if row["acf"] else
                   "has another config" if json.loads(row["config"]) != json.loads(of["config"]) else None)
        if problem:
            raise UserError(f"{where}: candidate {cid}, the no-ACF twin of candidate {twin_of!r}, {problem}; "
                            "was the file edited?")


def _extra(row: dict[str, Any]) -> dict[str, Any]:
    extra = json.loads(row.get("extra") or "{}")  # RunDir checked it is a JSON object
    return extra if isinstance(extra, dict) else {}


def check_values(run: RunDir, declared: Declared, rows: list[dict[str, Any]]) -> None:
    """Each column's direction against its objective's, and each stored objective value of a successful
    record against the value its own measurement gives."""
    from paretotune.objectives.base import ShapeMeasurement
    from paretotune.toolchain.arch import TARGETS

    target = TARGETS.get(declared.target)
    columns = _objectives(run.objective_columns(), declared)
    for column, objective in columns:
        if column.direction != objective.effective_direction:
            raise UserError(f"{run.path / META}: objective column '{column.column}' has direction "
                            f"'{column.direction}', but its objective '{objective.name}' is "
                            f"'{objective.effective_direction}'; was the file edited?")
    if target is None or not columns:
        return
    for i, row in enumerate(rows):
        if row["status"] != "ok":
            continue
        extra = _extra(row)
        for column, objective in columns:
            stored = row.get(column.column)
            if stored is None or column.shape not in extra:
                continue
            measured = ShapeMeasurement.from_stored(column.shape, target, extra[column.shape])
            try:
                again = float(objective.value(measured))
            except (ValueError, TypeError, ZeroDivisionError):
                continue  # the record does not keep this objective's input
            if math.isfinite(again) and not math.isclose(stored, again, rel_tol=1e-9, abs_tol=1e-12):
                raise UserError(f"{run.path / RESULTS}: candidate {row['candidate_id']} (record {i + 1}): "
                                f"'{column.column}' is {stored!r}, but the record's own measurement "
                                f"(extra.{column.shape}) gives {again!r}; was the file edited?")


def _objectives(columns: list[ObjectiveColumn], declared: Declared) -> list[tuple[ObjectiveColumn, Any]]:
    """Each stored column with the campaign's objective that produced it (parameters included); columns no
    objective of the campaign produces are left out (the campaign copy's hash vouches for the campaign)."""
    multi = len(declared.shapes) > 1
    return [(c, objective) for objective in _instances(declared) for c in columns
            if c.objective == objective.name and c.column == objective.column(c.shape, multi)]


def _instances(declared: Declared) -> list[Any]:
    """The campaign's objectives with their parameters (those the registry refuses are left out: a run
    never started with one)."""
    from paretotune.objectives.registry import OBJECTIVES

    out = []
    for name, params in declared.objectives:
        try:
            out.append(OBJECTIVES[name](**params))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def check_acf_files(run: RunDir, rows: list[dict[str, Any]]) -> None:
    """Every ACF file against its name; the ACFs records name, present."""
    folder = run.path / "acf"
    named: dict[str, int] = {}
    for row in rows:
        if row["acf"] and not ACF_NAME.match(row["acf"]):
            raise UserError(f"{run.path / RESULTS}: candidate {row['candidate_id']} names the ACF {row['acf'][:80]!r}, "
                            "not a sha256 (a run names its ACF files by content); was the file edited?")
        if row["acf"]:
            named.setdefault(row["acf"], row["candidate_id"])
    files = folder.glob("*.acf") if folder.is_dir() else ()
    present = {p.name[:-4]: p for p in files if ACF_NAME.match(p.name[:-4])}
    for sha, path in sorted(present.items()):  # other names: not files paretotune wrote or reads
        problem = not_a_file(path)  # a FIFO would hang the read
        if problem:
            raise UserError(f"{path}: not a regular file ({problem})")
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_ACF_BYTES + 1)
        except OSError as exc:
            raise UserError(f"{path}: cannot read the ACF ({exc.strerror})") from None
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha:
            used = f" (candidate {named[sha]} names it)" if sha in named else ""
            raise UserError(f"{path}: the ACF's content does not match its name (sha256 {digest[:12]}...){used}; "
                            "was it edited or replaced?")
    missing = sorted((cid, sha) for sha, cid in named.items() if sha not in present)
    if missing:
        first = ", ".join(f"{sha[:12]} (candidate {cid})" for cid, sha in missing[:3])
        warn_once(f"{folder}: {len(missing)} ACF file{'s' if len(missing) > 1 else ''} the records name "
                  f"{'are' if len(missing) > 1 else 'is'} missing: {first}{', ...' if len(missing) > 3 else ''}; "
                  "their numbers are shown as measured, but those candidates cannot be rebuilt from this folder")
