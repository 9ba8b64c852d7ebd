"""What ``validate`` does for ``ship``: it re-checks every winner on every shape it won (and only those), writes
``recheck.json`` tied to its verdicts, never leaves an older one beside new verdicts, and can measure each
candidate on its own bucket's shapes only (``--per-bucket``)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from paretotune.errors import UserError
from paretotune.ship.make import per_bucket_candidates, rank_per_bucket
from paretotune.validate.worker import validate_shape
from tests.measure.test_arms import ScaleAdapter, fixed_timer
from tests.ship.conftest import acf_candidates, synthetic, validate


def test_each_winner_shape_is_rechecked_and_the_record_names_its_verdicts(run_copy: Path) -> None:
    one, two = acf_candidates(run_copy)[:2]
    jobs: list[dict[str, Any]] = []

    def recheck(run: Any, todo: list[dict[str, Any]]) -> dict[str, Any]:
        jobs.extend(todo)
        return {"checks": [{"candidate_id": j["candidate_id"], "shape": j["shape"], "run": 9, "passed": 9,
                            "bit_identical": True} for j in todo]}

    result = validate(run_copy, {one: {"a": 0.95, "b": 0.96}, two: {"c": 1.03}}, recheck=recheck)
    assert sorted((j["candidate_id"], j["shape"]) for j in jobs) == [(one, "a"), (one, "b")]  # two is slower on c
    assert all(j["acf_path"] and Path(j["acf_path"]).is_file() and j["config"] == {} for j in jobs)
    saved = json.loads((run_copy / "recheck.json").read_text())
    assert saved == result.recheck
    assert saved["validation_sha256"] == hashlib.sha256((run_copy / "validation.csv").read_bytes()).hexdigest()


def test_without_a_recheck_no_older_record_is_left(run_copy: Path) -> None:
    one = acf_candidates(run_copy)[0]
    validate(run_copy, {one: {"a": 0.95}})
    assert (run_copy / "recheck.json").exists()
    result = validate(run_copy, {one: {"a": 0.95}}, recheck="auto")  # an injected measure: auto re-checks nothing
    assert result.recheck is None and not (run_copy / "recheck.json").exists()


def test_a_candidate_limited_to_its_bucket_is_measured_there_only(run_copy: Path) -> None:
    one, two = acf_candidates(run_copy)[:2]
    seen: list[dict[str, Any]] = []
    measure = synthetic({one: {"a": 0.95, "b": 0.95}, two: {"c": 0.95}})

    def spy(run: Any, arms: list[dict[str, Any]], *rest: Any) -> dict[str, Any]:
        seen.extend(arms)
        return measure(run, arms, *rest)

    from paretotune.validate.validation import validate_run

    validate_run(run_copy, candidates=[one, two], top=2, rounds=20, rep_ms=1, warmup_ms=1, alpha=0.01,
                 min_effect=0.5, measure=spy, recheck=None, shapes_of={one: ["a", "b"], two: ["c"]})
    assert {a["candidate_id"]: a["shapes"] for a in seen} == {one: ["a", "b"], two: ["c"]}
    table = pd.read_csv(run_copy / "validation.csv")
    cands = table[table["role"] == "candidate"]
    assert sorted(zip(cands["candidate_id"], cands["shape"])) == sorted([(one, "a"), (one, "b"), (two, "c")])


def test_the_worker_measures_a_limited_candidate_only_on_its_shapes() -> None:
    """validate's real per-shape loop (CPU tensors, an injected timer) skips a candidate off its shapes."""
    import random

    from paretotune.records import Shape

    adapter = ScaleAdapter()
    shape = Shape("small", {"N": 256})
    cands = [{"candidate_id": 1, "config": {"scale": 2.0, "bias": 0.0, "num_warps": 8}, "acf_path": None,
              "shapes": ["large"]},
             {"candidate_id": 2, "config": {"scale": 2.0, "bias": 0.0, "num_warps": 8}, "acf_path": None}]
    out = validate_shape(adapter, shape, cands, 3, 0, "cpu", "events", fixed_timer(adapter), random.Random(0))
    assert set(out["samples"]) == {"baseline", "-1", "2"}


def test_per_bucket_ranks_each_bucket_by_its_own_shapes() -> None:
    rows = [{"candidate_id": 0, "is_baseline": True, "status": "ok", "t@a": 1.0, "t@b": 1.0, "t@c": 1.0},
            {"candidate_id": 1, "is_baseline": False, "status": "ok", "t@a": 0.90, "t@b": 0.99, "t@c": 1.2},
            {"candidate_id": 2, "is_baseline": False, "status": "ok", "t@a": 0.95, "t@b": 0.95, "t@c": 0.99},
            {"candidate_id": 3, "is_baseline": False, "status": "ok", "t@a": 0.80, "t@b": 1.01, "t@c": 0.90},
            {"candidate_id": 4, "is_baseline": False, "status": "failed", "t@a": 0.5, "t@b": 0.5, "t@c": 0.5}]
    results = pd.DataFrame(rows)
    runtime = {"a": "t@a", "b": "t@b", "c": "t@c"}
    ids, shapes_of = rank_per_bucket(results, runtime, {"a": 0, "b": 0, "c": 1}, 1, 12)
    # bucket 0: 1 (geomean 0.945 -> 1.058x) beats 2 (1.053x); 3 is slower on b; failed records never count
    assert ids == [1, 3] and shapes_of == {1: ["a", "b"], 3: ["c"]}
    ids, shapes_of = rank_per_bucket(results, runtime, {"a": 0, "b": 0, "c": 1}, 2, 12)
    assert ids == [1, 2, 3] and shapes_of == {1: ["a", "b"], 2: ["a", "b", "c"], 3: ["c"]}
    ids, _ = rank_per_bucket(results, runtime, {"a": 0, "b": 0, "c": 1}, 2, 2)  # each bucket's best first
    assert ids == [1, 3]
    # the A/B ratio the GPU worker recorded next to each candidate wins over the baseline record's time
    results["extra"] = [json.dumps({"c": {"ratio_to_baseline": 0.8}}) if c == 2 else "{}"
                        for c in results["candidate_id"]]
    ids, shapes_of = rank_per_bucket(results, runtime, {"a": 0, "b": 0, "c": 1}, 1, 12)
    assert shapes_of == {1: ["a", "b"], 2: ["c"]}


def test_per_bucket_needs_runtimes(static_run: Path) -> None:
    with pytest.raises(UserError, match="--per-bucket ranks candidates by runtime"):
        per_bucket_candidates(static_run, 2)


def test_the_real_recheck_worker_runs_each_job_in_a_spawned_process(static_run: Path) -> None:
    """The production path end to end up to the GPU: spawned worker, the run's campaign and adapter, one job per
    winner-shape reported through the progress file. Here (no CUDA) every check fails, each saying why."""
    from paretotune.validate.recheck import SCALES, recheck_in_fresh_processes
    from paretotune.store import RunDir

    run = RunDir(static_run)
    one, two = acf_candidates(static_run)[:2]
    jobs = [{"candidate_id": cid, "shape": shape, "config": {}, "acf_path": str(run.acf_path(acf))}
            for cid, shape, acf in [(one, "a", run.results().set_index("candidate_id").loc[one, "acf"]),
                                    (two, "c", run.results().set_index("candidate_id").loc[two, "acf"])]]
    done = recheck_in_fresh_processes(run, jobs)
    assert [(c["candidate_id"], c["shape"]) for c in done["checks"]] == [(one, "a"), (two, "c")]
    assert done["scales"] == list(SCALES) and len(done["seeds"]) == 3
    for check in done["checks"]:
        assert check["run"] == 9 and check["passed"] == 0 and not check["bit_identical"]
        assert check["reference"] == "no-ACF twin" and "seed" in check["failures"][0]
