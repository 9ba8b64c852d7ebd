"""The benchmarks read runs through the public reader (``paretotune.open_run``, in benchmarks/common.py) and get
what the store itself reads, on a real recorded run taken from its archive under benchmarks/results/."""
from __future__ import annotations

import importlib.util
import json
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

from paretotune.store import RunDir

ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = ROOT / "benchmarks" / "results" / "h200_2026-12-04a" / "runs.tar.xz"
RUN = "call4_runs/runs/rope_ncu"  # three objectives, two shapes, validated


def load(name: str) -> ModuleType:
    """A benchmark script as ``python benchmarks/NAME.py`` has it (benchmarks/ first on sys.path)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("archived")
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(out, members=[m for m in tar.getmembers() if m.name.startswith(RUN + "/")], filter="data")
    return out / RUN


def test_stored_records_are_what_the_store_reads(run: Path) -> None:
    common = load("common")
    ours, store = common.stored_records(run), RunDir(run).records()
    assert len(ours) == len(store) > 10
    for mine, theirs in zip(ours, store):
        assert (mine.candidate_id, mine.config, mine.acf, mine.is_baseline, mine.status, mine.error) == (
            theirs.candidate_id, theirs.config, theirs.acf, theirs.is_baseline, theirs.status, theirs.error)
        assert (mine.values, mine.stages, mine.extra, mine.measure_s) == (
            theirs.values, theirs.stages, theirs.extra, theirs.measure_s)
    assert common.run_meta(run) == RunDir(run).meta()


def test_search_vs_validation_pairs_each_verdict_with_its_search_figure(run: Path) -> None:
    compared = load("search_vs_validation").compare(run)
    verdicts = json.loads((run / "validation.json").read_text())["verdicts"]
    assert compared["candidates"] == len(RunDir(run).records()) - 1
    assert compared["members"] and len(compared["members"]) <= len(verdicts)
    for member in compared["members"]:
        assert member["search_speedup"] > 0 and member["validated_speedup"] > 0
