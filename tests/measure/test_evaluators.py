"""The composed GPU evaluator's one flow of records, with a fake build pool and a fake measurer (no GPU, no
processes): failed builds are final at once, the baseline sets the pool's next job, a failed measurement keeps
its reason and time, and with ncu objectives measured records wait for the batch's ncu values."""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from paretotune.campaign.load import load_campaign
from paretotune.campaign.resolve import make_objectives
from paretotune.errors import UserError
from paretotune.build.base import BuildPool, Built, Feed, Measured, failed_record
from paretotune.measure.evaluators import GpuEvaluator
from paretotune.cluster.session import import_ray
from paretotune.objectives.ncu_objectives import ACHIEVED_OCCUPANCY
from paretotune.records import Candidate, TrialRecord
from paretotune.runner.evaluator import measure_request
from paretotune.store.run_dir import RunDir

HERE = Path(__file__).resolve().parent


def _campaign(tmp_path: Path, objectives: str) -> Any:
    path = tmp_path / "c.yaml"
    path.write_text(f"""
name: composed
kernel: {{source: "{HERE.parent / 'cluster' / 'ray_fault_kernels.py'}:fault_scale"}}
shapes: [{{name: n4k, N: 4096}}]
objectives: {objectives}
acf: {{search_space: none}}
search: {{engine: random, generations: 1, pool_size: 6}}
""")
    return load_campaign(path)


def _cand(i: int) -> Candidate:
    return Candidate(candidate_id=i, generation=0 if i == 0 else 1, config={"BLOCK": 1024, "FAULT": 0},
                     is_baseline=i == 0)


def _built(i: int, compile_s: float = 0.0) -> TrialRecord:
    c = _cand(i)
    return TrialRecord(candidate_id=i, generation=c.generation, config=c.config, acf=None, is_baseline=c.is_baseline,
                       status="ok", stages={"ptxas_s": 0.5}, compile_s=compile_s)


def _per_shape(ms: float) -> dict[str, Any]:
    return {"n4k": {"runtime_ms": ms, "samples_ms": [ms], "baseline_ms": 2.0, "baseline_age_s": 0.0, "n_samples": 1,
                    "build_s": 0.1, "time_s": 0.2, "timing": "events"}}


class FakePool:
    accepts_feed = True

    def __init__(self, records: list[TrialRecord]) -> None:
        self.records, self.job, self.starts, self.timeout_s = records, "first job", 0, 999.0

    def run(self, candidates: Sequence[Candidate] | Feed) -> Iterator[TrialRecord]:
        self.starts_before_run = self.starts
        yield from self.records

    def start(self) -> None:
        self.starts += 1

    def close(self) -> None:
        pass


class FakeMeasurer:
    """Measures each submitted record right after its build, like the local GPU worker."""

    def __init__(self, results: dict[int, tuple[str, Any]], ncu: dict[int, Any]) -> None:
        self.results, self.ncu_values, self.todo = results, ncu, list[TrialRecord]()
        self.ncu_asked: list[tuple[list[int], list[str]]] = []

    def events(self, pool: BuildPool, candidates: Sequence[Candidate] | Feed) -> Iterator[Built | Measured]:
        for rec in pool.run(candidates):
            yield Built(rec)
            while self.todo:
                rec = self.todo.pop(0)
                yield Measured(replace(rec, measure_s=0.25), *self.results[rec.candidate_id])

    def submit(self, record: TrialRecord) -> None:
        self.todo.append(record)

    def ncu(self, records: list[TrialRecord], metrics: list[str]) -> dict[int, dict[str, dict[str, float]]]:
        self.ncu_asked.append(([r.candidate_id for r in records], metrics))
        return self.ncu_values

    def close(self) -> None:
        pass


def test_builds_then_measurements_in_one_flow(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, "[runtime]")
    pool = FakePool([_built(0, compile_s=1.5), failed_record(_cand(1), "ptxas exited 1"), _built(2), _built(3)])
    measurer = FakeMeasurer({0: ("ok", _per_shape(2.0)), 2: ("ok", _per_shape(1.5)),
                             3: ("failed", "GPU worker died (exit code -11)")}, {})
    ev = GpuEvaluator(measure_request(campaign), RunDir(tmp_path / "run"), make_objectives(campaign), pool, measurer)
    assert ev.accepts_feed
    out = list(ev.stream([_cand(i) for i in range(4)]))
    assert [r.candidate_id for r in out] == [0, 1, 2, 3]  # each as soon as it is final
    assert pool.job != "first job"  # the baseline set the search candidates' job
    # and their whole build's limit: 10x its 1.5 s build, plus twice the ptxas limit (30x 0.5 s), plus 5 s
    assert pool.timeout_s == 15.0 + 2 * 15.0 + 5.0
    assert pool.starts == pool.starts_before_run == 1  # all workers started before the baseline's build
    assert out[1].status == "failed" and out[1].error == "ptxas exited 1" and out[1].measure_s == 0.0
    assert out[0].values == {"runtime": 2.0} and out[2].values == {"runtime": 1.5}
    assert out[2].extra["n4k"]["ratio_to_baseline"] == 0.75 and out[2].measure_s == 0.25
    assert out[2].stages == {"ptxas_s": 0.5, "gpu_build_s": 0.1, "gpu_time_s": 0.2}
    assert (out[3].status, out[3].error, out[3].measure_s) == ("failed", "GPU worker died (exit code -11)", 0.25)
    assert measurer.ncu_asked == []


def test_ncu_objectives_hold_measured_records_for_the_batch(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, "[runtime, occupancy]")
    pool = FakePool([_built(0), _built(1), _built(2)])
    metric = ACHIEVED_OCCUPANCY
    measurer = FakeMeasurer({0: ("ok", _per_shape(2.0)), 1: ("failed", "timed out"), 2: ("ok", _per_shape(1.0))},
                            {0: {"n4k": {metric: 50.0}}})  # candidate 2's ncu run gave nothing
    ev = GpuEvaluator(measure_request(campaign), RunDir(tmp_path / "run"), make_objectives(campaign), pool, measurer)
    assert not ev.accepts_feed
    out = list(ev.stream([_cand(i) for i in range(3)]))
    assert [r.candidate_id for r in out] == [1, 0, 2]  # the failed one at once, the measured after ncu
    assert measurer.ncu_asked == [([0, 2], [metric])]
    assert out[1].status == "ok" and out[1].values == {"runtime": 2.0, "occupancy": 50.0}
    assert out[2].status == "failed" and out[2].error.startswith("measurement incomplete: objective 'occupancy'")


def test_ray_is_imported_only_for_the_ray_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray is an optional extra: the evaluator factory and the Ray modules load without it, and a Ray backend
    without it is a one-line error naming the install."""
    code = ("import sys, paretotune.runner.evaluator, paretotune.cluster.measurer\n"
            "assert 'ray' not in sys.modules, 'ray imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed: ``import ray`` raises ImportError
    with pytest.raises(UserError, match=r"^c.yaml: execution.backend: 'ray' needs ray: "
                                        r"pip install 'paretotune\[ray\]' \(or use backend: local\)$"):
        import_ray("c.yaml")
