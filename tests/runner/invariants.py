"""What a finished run must satisfy however often it was interrupted: every evaluation stored exactly once,
the engine told exactly what the store holds, and a front that follows from the stored records.

Why not "the same front as an uninterrupted run": CompileIQ's sampler takes no seed, so two uninterrupted runs
with one seed already propose different ACFs. These checks fail on every way a resume can go wrong instead:
a lost evaluation (an id missing, a told point not stored, a stored point never told), a repeated one (an id
or a (config, ACF) point twice), or a wrong counter (budget not met, candidates still pending).
"""
from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

from paretotune.pareto import rank_fronts
from paretotune.records import TrialRecord
from paretotune.runner.ledger import minimization_vector
from paretotune.store import RunDir
from paretotune.store.checkpoint import read_checkpoint

Key = tuple[str, str | None]


def point_key(config: dict[str, Any], acf: str | None) -> Key:
    return json.dumps(config, sort_keys=True), acf


def check_records(run_dir: Path, budget: int) -> list[TrialRecord]:
    """Ids 0..budget each exactly once, then the no-ACF twins (extra["twin_of"]) numbered on from there, one
    baseline, no (config, ACF) point evaluated twice, every ACF config on front 0 also measured without its
    ACF, nothing pending, and every evaluation (twins too) counted."""
    run = RunDir(run_dir)
    records = run.records()
    ids = [r.candidate_id for r in records]
    dupes = sorted(i for i, n in Counter(ids).items() if n > 1)
    assert not dupes, f"candidates stored more than once: {dupes}"
    twins = sorted(r.candidate_id for r in records if "twin_of" in r.extra)
    assert twins == list(range(budget + 1, budget + 1 + len(twins))), f"twin ids {twins} do not follow {budget}"
    assert sorted(set(ids) - set(twins)) == list(range(budget + 1)), f"ids are not 0..{budget}: missing " \
        f"{sorted(set(range(budget + 1)) - set(ids))}, extra {sorted(set(ids) - set(twins) - set(range(budget + 1)))}"
    no_acf = {json.dumps(r.config, sort_keys=True) for r in records if r.acf is None}
    front = rank_fronts(run.results(), run.directions()).front(0)
    lacking = [int(c) for c, a, cfg in zip(front["candidate_id"], front["acf"], front["config"], strict=True)
               if a and json.dumps(json.loads(cfg), sort_keys=True) not in no_acf]
    assert not lacking, f"front candidates {lacking} have no no-ACF twin"
    assert [r.candidate_id for r in records if r.is_baseline] == [0]
    points = Counter(point_key(r.config, r.acf) for r in records if not r.is_baseline)
    repeated = [k for k, n in points.items() if n > 1]
    assert not repeated, f"points evaluated twice: {repeated}"
    cp = read_checkpoint(run_dir)
    assert cp is not None and cp.pending == () and cp.evaluated == budget + len(twins), cp
    return records


def check_engine_ledger(run_dir: Path, records: list[TrialRecord], space: dict[str, list[Any]]) -> int:
    """CompileIQ's result ledger (in the current engine checkpoint) against the store, point by point.

    Every stored search record must have been told with its score, and every told point must be stored
    (the de-duplicating wrapper may tell a stored point again as a repeat: same point, same score).
    Returns the number of ledger rows.
    """
    run = RunDir(run_dir)
    columns = run.objective_columns()
    # twins are measured after the search ends, for attribution: the engine never proposed them
    stored = {point_key(r.config, r.acf): minimization_vector(r, columns) for r in records
              if not r.is_baseline and "twin_of" not in r.extra}
    cp = read_checkpoint(run_dir)
    assert cp is not None and cp.engine_file, cp
    envelope = json.loads((run_dir / cp.engine_file).read_text())
    told: set[Key] = set()
    fixed = {k: v[0] for k, v in space.items() if len(v) == 1}
    # a joint search is seeded with the baseline config: a knob CompileIQ left out of a candidate
    # (knockout) takes the baseline's value
    baseline = next(r.config for r in records if r.is_baseline)
    seed = {k: v for k, v in baseline.items() if k in space and len(space[k]) > 1}
    for row in envelope["result_ledger"]["rows"]:
        knobs, acf_hex = row["params"]
        config = {**fixed, **seed, **{k: space[k][int(i)] for k, i in knobs.items()}}
        key = point_key(config, hashlib.sha256(bytes.fromhex(acf_hex)).hexdigest())
        assert key in stored, f"the engine was told a point the store does not hold: {key}"
        want = stored[key]
        if want is None:
            assert all(s == "*" for s in row["scores"]), (key, row["scores"])
        else:
            assert all(math.isclose(a, b) for a, b in zip(row["scores"], want, strict=True)), (key, row["scores"], want)
        told.add(key)
    untold = set(stored) - told
    assert not untold, f"stored records the engine was never told: {sorted(untold)[:3]}"
    return len(envelope["result_ledger"]["rows"])


def check_front(run_dir: Path) -> set[int]:
    """The front pareto/ ranks equals the non-dominated set computed here by brute force."""
    run = RunDir(run_dir)
    directions = run.directions()
    ranked = rank_fronts(run.results(), directions)
    front = {int(i) for i in ranked.front(0)["candidate_id"]}
    columns = run.objective_columns()
    vectors = {r.candidate_id: v for r in run.records() if (v := minimization_vector(r, columns)) is not None}

    def dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
        return all(x <= y for x, y in zip(a, b, strict=True)) and a != b

    brute = {i for i, v in vectors.items() if not any(dominates(w, v) for w in vectors.values())}
    assert front == brute, (sorted(front), sorted(brute))
    assert front, "empty front"
    return front


def check_helion_ledger(run_dir: Path, records: list[TrialRecord]) -> int:
    """The helion engine's results (in the current engine checkpoint) against the store, point by point: every
    stored search record told with its score, every told point stored. Returns the number told."""
    from paretotune.search.space import point_key as engine_key  # the engine's key: [config, ACF sha] as JSON

    run = RunDir(run_dir)
    columns = run.objective_columns()
    stored = {engine_key(r.config, r.acf): minimization_vector(r, columns) for r in records
              if not r.is_baseline and "twin_of" not in r.extra}
    cp = read_checkpoint(run_dir)
    assert cp is not None and cp.engine_file, cp
    state = json.loads((run_dir / cp.engine_file).read_text())
    import base64

    acfs = [None if a is None else hashlib.sha256(base64.b64decode(a)).hexdigest() for a in state["acf_table"]]
    told = set()
    for layout, values, acf, score in state["results"]:  # a config is its layout's keys with these values
        key = engine_key(dict(zip(state["layouts"][layout], values, strict=True)), acfs[acf])
        assert key in stored, f"the engine was told a point the store does not hold: {key}"
        want = stored[key]
        assert (score is None) == (want is None), (key, score, want)
        if want is not None:
            assert all(math.isclose(a, b) for a, b in zip(score, want, strict=True)), (key, score, want)
        told.add(key)
    untold = set(stored) - told
    assert not untold, f"stored records the engine was never told: {sorted(untold)[:3]}"
    return len(state["results"])
