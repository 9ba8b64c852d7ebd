"""Run directories for the report tests: real CPU quickstart runs (once per session) and small synthetic ones."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from paretotune.records import Candidate, TrialRecord
from paretotune.store import RunDir
from paretotune.store.checkpoint import Checkpointer

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "configs" / "quickstart.yaml"


def run_quickstart(out: Path, *, generations: int, pool_size: int) -> Path:
    """``paretotune run`` on configs/quickstart.yaml with a smaller budget, in a subprocess as a user runs it."""
    config = yaml.safe_load(QUICKSTART.read_text())
    config["search"].update(generations=generations, pool_size=pool_size)
    campaign = out.parent / f"{out.name}.yaml"
    campaign.write_text(yaml.safe_dump(config, sort_keys=False))
    env = dict(os.environ)
    env.setdefault("CIQ_SEARCH_SPACES_DIR", str(REPO.parent / "shared" / "compileiq"))
    proc = subprocess.run([sys.executable, "-m", "paretotune.cli", "run", str(campaign), "--out", str(out),
                           "--quiet"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    if not (out / "results.jsonl").exists() or not (out / "run.json").exists():
        pytest.fail(f"the quickstart run wrote no results (exit {proc.returncode}); is CIQ_SEARCH_SPACES_DIR set?\n"
                    f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return out


@pytest.fixture(scope="session")
def quickstart_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real CPU quickstart run (softmax, static objectives, CompileIQ ACFs, ptxas 13.3): 1 generation of 10."""
    return run_quickstart(tmp_path_factory.mktemp("quickstart") / "run", generations=1, pool_size=10)


@pytest.fixture
def quickstart_copy(quickstart_run: Path, tmp_path: Path) -> Path:
    """A private copy of the quickstart run, for tests that add files (validation.csv, reports)."""
    return Path(shutil.copytree(quickstart_run, tmp_path / "run"))


class _NoEngine:
    def save(self, path: str) -> bool:
        return False


def synthetic_acf(tag: str) -> tuple[str, bytes]:
    """(name, content) of a made-up ACF: its name is its content's sha256, as a run names its ACF files."""
    data = f"synthetic ACF {tag}\n".encode()
    return hashlib.sha256(data).hexdigest(), data


TWO_SHAPE_ACF, _TWO_SHAPE_ACF_BYTES = synthetic_acf("two shapes")


def write_run(path: Path, columns: Sequence[dict[str, str]], rows: Sequence[dict[str, Any]],
              meta: dict[str, Any] | None = None, campaign_text: str | None = None,
              acfs: dict[str, bytes] | None = None) -> Path:
    """A synthetic run directory written through RunDir and the Checkpointer, as the campaign loop writes it
    (every reader checks the records against the checkpoint and the campaign copy's fields): candidate 0 first,
    ids missing below the highest are in flight; the campaign copy is configs/quickstart.yaml by default.
    ``acfs``: ACF files to write, name -> content (see :func:`synthetic_acf`); a row naming an ACF without one
    makes every reader warn that the file is missing."""
    run = RunDir(path)
    run.create(QUICKSTART.read_text() if campaign_text is None else campaign_text,
               {"objective_columns": list(columns), "seed": 0, **(meta or {})})
    for name, data in (acfs or {}).items():
        (path / "acf" / f"{name}.acf").write_bytes(data)
    for r in rows:
        run.append(TrialRecord(candidate_id=r["candidate_id"], generation=r.get("generation", 0),
                               config=r.get("config", {}), acf=r.get("acf"), is_baseline=r.get("is_baseline", False),
                               status=r.get("status", "ok"), values=r.get("values", {}), error=r.get("error", "")))
    ids = {r["candidate_id"] for r in rows}
    if ids - {0}:
        top = max(ids)
        in_flight = tuple(Candidate(candidate_id=i, generation=1, config={}) for i in range(1, top) if i not in ids)
        Checkpointer(path).commit(_NoEngine(), next_id=top + 1, evaluated=len(ids - {0}), generation=1,
                                  elapsed_s=0.0, pending=in_flight)
    return path


def two_shape_run(path: Path) -> Path:
    """A synthetic two-shape run (runtime and occupancy per shape) with a baseline, winners on both shapes, a
    trade-off across shapes, a dominated candidate and a failure: the per-shape chart's cases."""
    shapes = ("small", "large")
    columns = [column(f"{o}@{s}", d, o, s) for s in shapes for o, d in (("runtime", "min"), ("occupancy", "max"))]

    def v(rs: float, os_: float, rl: float, ol: float) -> dict[str, float]:
        return {"runtime@small": rs, "occupancy@small": os_, "runtime@large": rl, "occupancy@large": ol}

    rows = [{"candidate_id": 0, "is_baseline": True, "values": v(0.20, 50, 1.00, 50)},
            {"candidate_id": 1, "acf": TWO_SHAPE_ACF, "values": v(0.16, 50, 0.80, 62.5)},  # better on both shapes
            {"candidate_id": 2, "values": v(0.18, 75, 0.95, 50)},  # better on both, less so
            {"candidate_id": 3, "values": v(0.12, 50, 1.20, 50)},  # faster on small, slower on large
            {"candidate_id": 4, "values": v(0.30, 25, 1.50, 25)},  # dominated
            {"candidate_id": 5, "status": "failed", "error": "compile timeout"}]
    return write_run(path, columns, rows, meta={"campaign": "synthetic-two-shapes", "target": "sm_90",
                                                "versions": {"ptxas": "13.3.73"}},
                     acfs={TWO_SHAPE_ACF: _TWO_SHAPE_ACF_BYTES})


def column(name: str, direction: str = "min", objective: str | None = None, shape: str = "default") -> dict[str, str]:
    return {"column": name, "direction": direction, "objective": objective or name.split("@")[0], "shape": shape}


def validation_frame(shape: str, candidates: Sequence[int], *, control_significant: bool = False) -> pd.DataFrame:
    """A validation.csv as 'paretotune validate' writes it: a control arm (-1), a faster candidate, a candidate
    that is not significant, and one whose re-check failed."""
    first, second, third = candidates[:3]
    rows = [
        {"candidate_id": -1, "n": 30, "mean": 0.2, "speedup": 1.003, "ci_low": 0.99, "ci_high": 1.01,
         "cohens_d": 0.05, "p_value": 0.8, "p_holm": 0.8, "significant": control_significant,
         "failed": "" if control_significant else "p=0.8 not < 0.01", "role": "control"},
        {"candidate_id": first, "n": 30, "mean": 0.16, "speedup": 1.25, "ci_low": 1.2, "ci_high": 1.3,
         "cohens_d": 3.1, "p_value": 1e-9, "p_holm": 3e-9, "significant": True, "failed": "", "role": "candidate"},
        {"candidate_id": second, "n": 30, "mean": 0.199, "speedup": 1.01, "ci_low": 0.98, "ci_high": 1.04,
         "cohens_d": 0.2, "p_value": 0.2, "p_holm": 0.4, "significant": False,
         "failed": "p=0.4 not < 0.01; d=0.2 not > 0.5", "role": "candidate"},
        {"candidate_id": third, "significant": False, "failed": "re-check failed: wrong answer", "role": "candidate"},
    ]
    frame = pd.DataFrame(rows)
    frame.insert(0, "shape", shape)
    return frame
