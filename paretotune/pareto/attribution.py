"""Which share of a candidate's gain is its config's and which its ACF's, from a run's stored results.

A candidate's *no-ACF twin* is the record of the same config built without an ACF (search adds one for every
ACF candidate on front 0, see :mod:`paretotune.search.twins`; the baseline is the twin of any candidate with
the default config). The ACF share is the twin's value over the candidate's, oriented as a speedup: > 1
means the ACF helped. A candidate without an ACF has no ACF share (``None``, never a made-up 1.0).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from paretotune.pareto.table import is_ok
from paretotune.records import Direction

TWIN_OF = "twin_of"  # key in a twin record's ``extra``: the candidate it was added for


def config_key(config: Any) -> str:
    """One string per config, whether given as a dict or as the stored JSON text."""
    if isinstance(config, str):
        config = json.loads(config)
    return json.dumps(config, sort_keys=True)


def has_acf(row: Mapping[str, Any]) -> bool:
    acf = row.get("acf")
    return isinstance(acf, str) and bool(acf)


def twin_ids(results: pd.DataFrame) -> dict[str, int]:
    """config key -> id of the first successful record of that config without an ACF (baseline included)."""
    out: dict[str, int] = {}
    if results.empty:
        return out
    ok = results[is_ok(results)].sort_values("candidate_id", kind="stable")
    for _, row in ok.iterrows():
        if not has_acf(row):
            out.setdefault(config_key(row["config"]), int(row["candidate_id"]))
    return out


def any_twin_ids(results: pd.DataFrame) -> dict[str, int]:
    """Like :func:`twin_ids`, failed records included: a twin that failed was measured and needs no retry."""
    out: dict[str, int] = {}
    for _, row in results.sort_values("candidate_id", kind="stable").iterrows():
        if not has_acf(row):
            out.setdefault(config_key(row["config"]), int(row["candidate_id"]))
    return out


def share(candidate: float, twin: float, direction: Direction) -> float:
    """The ACF's share as a speedup (> 1: the ACF helped): twin / candidate for "min", the inverse for "max"."""
    if not (math.isfinite(candidate) and math.isfinite(twin)) or (candidate if direction == "min" else twin) == 0:
        return math.nan
    return twin / candidate if direction == "min" else candidate / twin


def acf_shares(results: pd.DataFrame, rows: pd.DataFrame, directions: Mapping[str, Direction]
               ) -> list[dict[str, float] | None]:
    """For each of ``rows``: {objective column: ACF share} against its twin, or None (no ACF or no twin)."""
    twins = twin_ids(results)
    by_id = results.set_index("candidate_id")
    out: list[dict[str, float] | None] = []
    for _, row in rows.iterrows():
        twin = twins.get(config_key(row["config"])) if has_acf(row) else None
        if twin is None:
            out.append(None)
            continue
        t = by_id.loc[twin]
        out.append({c: share(float(row[c]), float(t[c]), d) for c, d in directions.items()})
    return out


def geomean(values: Sequence[float]) -> float:
    vals = np.asarray([v for v in values if math.isfinite(v) and v > 0], dtype=float)
    return float(np.exp(np.log(vals).mean())) if vals.size else math.nan


def primary_share(shares: Mapping[str, float] | None, columns: Sequence[Any]) -> tuple[str, float] | None:
    """(objective, ACF share) on the first objective whose share is defined on every shape (geometric mean
    over shapes); None without a twin or where no objective defines it (e.g. 0 spills against 0)."""
    if shares is None:
        return None
    for objective in dict.fromkeys(c.objective for c in columns):
        values = [shares[c.column] for c in columns if c.objective == objective]
        if values and all(math.isfinite(v) for v in values):
            return objective, geomean(values)
    return None


def share_label(row: Mapping[str, Any], shares: Mapping[str, float] | None, columns: Sequence[Any]) -> str:
    """'1.033x registers', or why there is none: 'no ACF', 'no twin', 'undefined'."""
    if not has_acf(row):
        return "no ACF"
    if shares is None:
        return "no twin"
    primary = primary_share(shares, columns)
    return "undefined" if primary is None else f"{primary[1]:.3f}x {primary[0]}"


def best_without_acf(results: pd.DataFrame, columns: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Per shape: the best successful no-ACF record by that shape's first objective, with its ratio to the
    baseline as a speedup (> 1 better). ``columns`` are ObjectiveColumn-like (column, direction, shape)."""
    out: dict[str, dict[str, Any]] = {}
    ok = results[is_ok(results)]
    no_acf = ok[[not has_acf(r) for _, r in ok.iterrows()]] if len(ok) else ok
    base = ok[ok["is_baseline"].astype(bool)] if len(ok) else ok
    for col in columns:
        if col.shape in out or no_acf.empty or col.column not in no_acf:
            continue
        values = pd.to_numeric(no_acf[col.column], errors="coerce")
        if not values.notna().any():
            continue
        best = no_acf.loc[values.idxmin() if col.direction == "min" else values.idxmax()]
        value = float(best[col.column])
        ratio = math.nan
        if not base.empty:
            b = float(base.iloc[0][col.column])
            ratio = share(value, b, col.direction)
        out[col.shape] = {"candidate_id": int(best["candidate_id"]), "config": json.loads(best["config"]),
                          "column": col.column, "value": value, "speedup": ratio}
    return out
