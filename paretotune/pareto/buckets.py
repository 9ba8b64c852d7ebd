"""Which heuristic bucket gets which validated winner: the rule ``paretotune ship`` applies, kept apart from
the files it writes so that the rule alone can be read and tested.

A bucket is what the kernel's heuristic dispatches on (a Helion AOT heuristic's ``key_<kernel>(*args)``, its
specialization cache key): every shape in it runs one config. So a bucket's config may change only where the
change was shown to be faster on every campaign shape that falls in it. :data:`RULE` says it in words; it is
printed in every shipped file.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

RULE = ("a bucket changes only if one candidate is a validated winner on every campaign shape in it (its "
        "speedup CI clears 1 + that shape's noise floor, Holm-adjusted p < alpha, Cohen's d above the minimum, "
        "the shape's baseline-vs-baseline control reliable, or off by a bias within the bound that then is its "
        "noise floor) and passed its re-check against its no-ACF twin on "
        "fresh inputs on each of them; among such candidates the highest geomean speedup over the bucket's "
        "shapes wins, then the best worst shape. The winner's ACF ships with it only if the ACF is shown to help "
        "on every shape of the bucket (its share against the no-ACF twin clears the same bar), or if the config "
        "without it is not itself a validated winner on every one of them. Every other bucket keeps its old "
        "config untouched.")

PER_SHAPE = ["speedup", "ci_low", "ci_high", "p_holm", "noise_floor", "config_speedup", "acf_speedup", "twin_id"]


@dataclass(frozen=True)
class BucketChoice:
    """One bucket: its campaign shapes, the winner (None: unchanged) and why; per shape the numbers shown."""

    bucket: Hashable
    shapes: tuple[str, ...]
    winner: int | None
    reason: str  # why it is unchanged ("" when it changes)
    per_shape: dict[str, dict[str, Any]] = field(default_factory=dict)  # the winner's (or best try's) rows
    recheck: dict[str, dict[str, Any]] = field(default_factory=dict)  # shape -> the winner's re-check
    acf_left_out: str = ""  # why the winner ships without its ACF ("": it ships as validated)


def _geomean(values: list[float]) -> float:
    vals = [v for v in values if math.isfinite(v) and v > 0]
    return float(np.exp(np.mean(np.log(vals)))) if vals else math.nan


def _row(verdicts: pd.DataFrame, cid: int, shape: str) -> dict[str, Any] | None:
    rows = verdicts[(verdicts["candidate_id"] == cid) & (verdicts["shape"] == shape)
                    & (verdicts["role"] == "candidate")]
    if rows.empty:
        return None
    row = rows.iloc[0]
    out = {k: (float(row[k]) if k in row and pd.notna(row[k]) else math.nan) for k in PER_SHAPE}
    out["significant"] = bool(row["significant"]) if pd.notna(row["significant"]) else False
    shown = row.get("acf_significant")  # absent in tables written before it was judged: unknown, not "no"
    out["acf_significant"] = None if shown is None or pd.isna(shown) else bool(shown)
    out["failed"] = "" if pd.isna(row.get("failed", "")) else str(row.get("failed", ""))
    return out


def choose(verdicts: pd.DataFrame, buckets: Mapping[str, Hashable], rechecks: Mapping[tuple[int, str], dict[str, Any]],
           passed: Any) -> list[BucketChoice]:
    """Apply :data:`RULE`. ``buckets``: campaign shape -> its bucket; ``rechecks``: (candidate, shape) -> its
    re-check record; ``passed(record)`` says whether a re-check counts. Buckets come in first-seen order."""
    order: dict[Hashable, list[str]] = {}
    for shape, bucket in buckets.items():
        order.setdefault(bucket, []).append(shape)
    measured = set(verdicts["shape"].astype(str))
    reliable = {s: bool(verdicts.loc[verdicts["shape"] == s, "reliable"].fillna(False).astype(bool).all())
                for s in measured}
    cands = sorted({int(c) for c in verdicts.loc[verdicts["role"] == "candidate", "candidate_id"]})
    out = []
    for bucket, shapes in order.items():
        missing = [s for s in shapes if s not in measured]
        if missing:
            out.append(BucketChoice(bucket, tuple(shapes), None, f"shape {missing[0]} was not validated"))
            continue
        void = [s for s in shapes if not reliable[s]]
        if void:
            out.append(BucketChoice(bucket, tuple(shapes), None,
                                    f"shape {void[0]}: the control differs from the baseline (verdicts void)"))
            continue
        tries = []
        for cid in cands:
            rows = {s: _row(verdicts, cid, s) for s in shapes}
            if any(r is None for r in rows.values()):
                continue
            speedups = [r["speedup"] for r in rows.values()]  # type: ignore[index]
            won = all(r["significant"] for r in rows.values())  # type: ignore[index]
            checked = {s: rechecks.get((cid, s), {}) for s in shapes}
            ok = won and all(c and passed(c) for c in checked.values())
            tries.append((ok, won, _geomean(speedups), min(speedups), -cid, cid, rows, checked))
        if not tries:
            out.append(BucketChoice(bucket, tuple(shapes), None, "no candidate was validated on every shape of it"))
            continue
        tries.sort(key=lambda t: (t[0], t[1], _finite(t[2]), _finite(t[3]), t[4]), reverse=True)
        ok, won, _g, _w, _n, cid, rows, checked = tries[0]
        if ok:
            out.append(BucketChoice(bucket, tuple(shapes), cid, "", rows, checked,
                                    acf_left_out=_acf_left_out(verdicts, rows)))
            continue
        if won:
            bad = next(s for s, c in checked.items() if not c or not passed(c))
            why = (f"candidate {cid} won every shape but its re-check on {bad} "
                   + ("did not run" if not checked[bad] else f"failed ({_first_failure(checked[bad])})"))
        else:
            lost = next(s for s, r in rows.items() if not r["significant"])
            why = (f"no candidate is a validated winner on every shape of the bucket (best try: candidate {cid}, "
                   f"{rows[lost]['speedup']:.3f}x [{rows[lost]['ci_low']:.3f}, {rows[lost]['ci_high']:.3f}] on "
                   f"{lost})")
        out.append(BucketChoice(bucket, tuple(shapes), None, why, rows, checked))
    return out


def _acf_left_out(verdicts: pd.DataFrame, rows: Mapping[str, dict[str, Any]]) -> str:
    """Why a winner's ACF should not ship, or "" to ship it: its share against its no-ACF twin was not shown to
    help on some shape of the bucket, while the twin itself (the same config, no ACF) is a validated winner on every
    one of them. An ACF adds a ptxas release to the kernel's needs; it has to earn that. A winner without an ACF,
    or whose twin is the baseline's build (an ACF on the old config), or judged before this was recorded, keeps
    what it has."""
    shown = {s: r.get("acf_significant") for s, r in rows.items()}
    if any(v is None for v in shown.values()) or all(shown.values()):
        return ""
    for shape, row in rows.items():
        twin = row.get("twin_id", math.nan)
        if not math.isfinite(twin):
            return ""
        mine = verdicts[(verdicts["candidate_id"] == int(twin)) & (verdicts["shape"] == shape)
                        & verdicts["role"].isin(["twin", "candidate"])]
        if mine.empty or not (pd.notna(mine.iloc[0]["significant"]) and bool(mine.iloc[0]["significant"])):
            return ""
    lost = next(s for s, v in shown.items() if not v)
    r = rows[lost]
    return (f"its ACF was not shown to help on {lost} ({r['acf_speedup']:.3f}x against its no-ACF twin); the "
            "config alone is a validated winner on every shape of the bucket")


def _finite(value: float) -> float:
    return value if math.isfinite(value) else -math.inf


def _first_failure(check: dict[str, Any]) -> str:
    failures = check.get("failures") or []
    done = f"{check.get('passed', 0)}/{check.get('run', 0)} checks passed"
    return f"{done}: {failures[0]}" if failures else done
