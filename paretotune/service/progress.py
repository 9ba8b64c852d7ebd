"""What a client sees of a campaign: progress, best so far, the ranked front, points for the plot, artifacts.

Everything is read from the run directory the campaign process writes, through the reader every command
uses (:func:`paretotune.front.open_run`: a last line still being written is left out while the campaign
process holds the run; the integrity rule of :mod:`paretotune.front.integrity`). A damaged run (a torn last
line of a stopped campaign among them) does not break the listing: its progress and points say ``damaged``
with the reader's one line, and its front is a 409 with that line. Reads are cached on the results file's
size and mtime, so polling a status endpoint costs a ``stat`` when nothing changed.
"""
from __future__ import annotations

import json
import logging
import math
import re
import threading
from pathlib import Path
from typing import Any

from paretotune.errors import UserError
from paretotune.store.results import RESULTS
from paretotune.store.run_dir import META

ARTIFACT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$")


class RunView:
    """Cached views of run directories, keyed by path and (size, mtime_ns) of results.jsonl."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], tuple[tuple[int, int], Any]] = {}
        self._lock = threading.Lock()

    def _cached(self, kind: str, run: Path, build: Any) -> Any:
        try:
            st = (run / RESULTS).stat()
            key = (st.st_size, st.st_mtime_ns)
        except OSError:
            key = (-1, -1)
        with self._lock:
            hit = self._cache.get((kind, str(run)))
        if hit is not None and hit[0] == key:
            return hit[1]
        value = build(run)
        with self._lock:
            self._cache[(kind, str(run))] = (key, value)
        return value

    def progress(self, run: Path, budget: int) -> dict[str, Any]:
        return self._cached("progress", run, lambda r: _progress(r, budget))

    def front(self, run: Path) -> dict[str, Any] | None:
        return self._cached("front", run, _front)

    def points(self, run: Path) -> dict[str, Any]:
        return self._cached("points", run, _points)

    def report(self, run: Path) -> str:
        """The HTML report (several MB with plotly inlined): built once per change of the results."""
        from paretotune.report import load_report_data, render_html

        return str(self._cached("report", run, lambda r: render_html(load_report_data(r))))


def _columns(run: Path) -> list[dict[str, Any]]:
    try:
        return list(json.loads((run / META).read_text())["objective_columns"])
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _num(value: Any) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _read(run: Path) -> Any:
    """The results table through the reader every command uses (its integrity rule included)."""
    from paretotune.front import open_run

    return open_run(run).results()


def _damaged(run: Path, exc: UserError) -> str:
    """The reader's line without the server's paths (the client knows the campaign by id)."""
    return str(exc).replace(str(run), "<run>")


def _progress(run: Path, budget: int) -> dict[str, Any]:
    columns = _columns(run)
    try:
        table = _read(run) if (run / RESULTS).exists() else None
    except UserError as exc:
        return {"evaluated": 0, "twins": 0, "budget": budget, "failures": 0, "fraction": 0.0, "best": {},
                "damaged": _damaged(run, exc)}
    # the budget counts the search and the baseline; no-ACF twins (extra.twin_of) come after it, counted apart
    twins = 0 if table is None or "extra" not in table else int(table["extra"].astype(str).str.contains(
        '"twin_of"', regex=False).sum())
    evaluated = 0 if table is None else len(table) - twins
    failures = 0 if table is None or "status" not in table else int((table["status"] != "ok").sum())
    best: dict[str, Any] = {}
    if table is not None and evaluated and "status" in table:
        ok = table[table["status"] == "ok"]
        for col in columns:
            name = col["column"]
            if name not in ok or ok[name].dropna().empty:
                continue
            values = ok[name].astype(float)
            idx = values.idxmin() if col["direction"] == "min" else values.idxmax()
            best[name] = {"value": _num(values[idx]), "candidate_id": int(ok.loc[idx, "candidate_id"]),
                          "direction": col["direction"]}
    return {"evaluated": evaluated, "twins": twins, "budget": budget, "failures": failures,
            "fraction": min(1.0, evaluated / budget) if budget else 0.0, "best": best}


def _front(run: Path) -> dict[str, Any] | None:
    """The ranked front as ``paretotune front --json`` prints it, or None before anything is stored."""
    from paretotune.front import build_front, render_json

    if not (run / META).is_file() or not (run / RESULTS).exists() or (run / RESULTS).stat().st_size == 0:
        return None
    doc = json.loads(render_json(build_front(run)))
    doc.pop("run_dir", None)  # a server path: the client knows the campaign by id
    return doc


def _points(run: Path) -> dict[str, Any]:
    """Every evaluated candidate's objective values, with its front rank (for the dashboard's plot)."""
    columns = _columns(run)
    if not columns or not (run / RESULTS).exists():
        return {"objectives": columns, "points": []}
    try:
        table = _read(run)
    except UserError as exc:
        return {"objectives": columns, "points": [], "damaged": _damaged(run, exc)}
    front_ids: set[int] = set()
    try:
        doc = _front(run)
        front_ids = {int(r["candidate_id"]) for r in (doc or {}).get("front", [])}
    except Exception:  # a plot without the front highlighted beats no plot
        logging.getLogger("paretotune.service").warning("front of %s not ranked", run, exc_info=True)
    points = []
    for _, row in table.iterrows():
        cid = int(row["candidate_id"])
        points.append({"candidate_id": cid, "status": str(row.get("status", "")),
                       "is_baseline": bool(row.get("is_baseline", False)), "front": cid in front_ids,
                       "values": {c["column"]: _num(row.get(c["column"])) for c in columns}})
    return {"objectives": columns, "points": points}


def artifact_names(run: Path) -> list[str]:
    """ACFs the run evaluated (``acf/<sha>.acf``) and what validation wrote (``artifacts/``: ACFs, pin snippets)."""
    names: set[str] = set()
    for folder, pattern in ((run / "acf", "*.acf"), (run / "artifacts", "*")):
        if folder.is_dir():
            names.update(p.name for p in folder.glob(pattern) if p.is_file() and ARTIFACT_RE.match(p.name))
    return sorted(names)


def artifact_path(run: Path, name: str) -> Path | None:
    """The file for ``name`` inside the run's acf/ or artifacts/ folder; None for anything else."""
    if not ARTIFACT_RE.match(name) or ".." in name:
        return None
    for folder in (run / "artifacts", run / "acf"):
        path = (folder / name).resolve()
        if path.is_file() and path.is_relative_to(folder.resolve()) and (folder.name != "acf" or name.endswith(".acf")):
            return path
    return None


def budget_of(text: str) -> int:
    """Evaluations a campaign makes: its search budget plus the baseline (0 if the stored copy is unreadable)."""
    from paretotune.campaign.load import parse_text

    try:
        return parse_text(text, "campaign.yaml").search.budget + 1
    except UserError:
        return 0
