"""A real static CPU campaign of the project's own Helion AOT kernel (tests/fixtures/helion_aot/scale_rows.py)
whose heuristic is in Helion's generated format (``key_scale_rows`` + ``_C``): three buckets by row width,
campaign shapes a and b in bucket 0, c in bucket 1, none in bucket 2. ``validated`` then drives the real
``validate_run`` (choice of arms, twins, the control gate, Welch + Holm, attribution, verdict files) with
synthetic GPU samples and re-check records, as a GPU would give them."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from paretotune.validate.worker import CONTROL_ID
from paretotune.validate.validation import Validation, validate_run
from paretotune.store import RunDir

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "helion_aot"
HEURISTIC = FIXTURES / "scale_rows_keyed_sm90.py"
SHAPES = {"a": (256, 512), "b": (512, 1024), "c": (512, 4096)}

CAMPAIGN = f"""
name: ship-scale-rows
kernel:
  source: {FIXTURES}/scale_rows.py:scale_rows
  inputs: {FIXTURES}/scale_rows.py:inputs
  heuristic: {HEURISTIC}
shapes:
""" + "".join(f"  - {{name: {k}, M: {m}, N: {n}}}\n" for k, (m, n) in SHAPES.items()) + """objectives: [registers]
acf: {search_space: ptxas-13.3}
search: {engine: random, strategy: acf-only, generations: 1, pool_size: 6}
evaluation: {workers: 2}
"""


@pytest.fixture(scope="session")
def static_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``paretotune run`` of the campaign above (real Helion codegen, Triton AOT compiles, ptxas 13.3 builds)."""
    base = tmp_path_factory.mktemp("ship")
    (base / "campaign.yaml").write_text(CAMPAIGN)
    env = dict(os.environ)
    env.setdefault("CIQ_SEARCH_SPACES_DIR", str(REPO.parent / "shared" / "compileiq"))
    proc = subprocess.run([sys.executable, "-m", "paretotune.cli", "run", str(base / "campaign.yaml"), "--out",
                           str(base / "run"), "--quiet"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    if proc.returncode != 0:
        pytest.fail(f"the static campaign failed (exit {proc.returncode}):\n"
                    f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return base / "run"


@pytest.fixture
def run_copy(static_run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(static_run, tmp_path / "run"))


def acf_candidates(run: Path) -> list[int]:
    results = RunDir(run).results()
    ok = results[(results["status"] == "ok") & results["acf"].astype(bool)]
    return [int(c) for c in ok["candidate_id"]]


def synthetic(speed: dict[int, dict[str, float]], control: float = 1.0) -> Callable[..., dict[str, Any]]:
    """GPU-like samples: each arm's mean is the baseline's times ``speed[arm][shape]`` (1.0 when not given)."""
    def measure(run: RunDir, arms: list[dict[str, Any]], rounds: int, warmup_ms: float, rep_ms: float) -> dict:
        rng = np.random.default_rng(0)
        out = {}
        for shape in SHAPES:
            samples = {"baseline": list(rng.normal(0.300, 0.0003, rounds)),
                       str(CONTROL_ID): list(rng.normal(0.300 * control, 0.0003, rounds))}
            for arm in arms:
                if arm.get("shapes") is None or shape in arm["shapes"]:
                    ratio = speed.get(arm["candidate_id"], {}).get(shape, 1.0)
                    samples[str(arm["candidate_id"])] = list(rng.normal(0.300 * ratio, 0.0003, rounds))
            out[shape] = {"samples": samples, "errors": {}}
        return out
    return measure


def rechecked(fail: set[tuple[int, str]] = frozenset()) -> Callable[..., dict[str, Any]]:
    """Re-check records as the GPU worker writes them: 9 of 9 passed and bit-identical, except ``fail``."""
    def recheck(run: RunDir, jobs: list[dict[str, Any]]) -> dict[str, Any]:
        checks = []
        for job in jobs:
            bad = (job["candidate_id"], job["shape"]) in fail
            checks.append({"candidate_id": job["candidate_id"], "shape": job["shape"], "run": 9,
                           "passed": 6 if bad else 9, "bit_identical": not bad, "reference": "no-ACF twin",
                           "failures": ["seed 1073741824, inputs x1000: wrong answer: 3 of 8192 elements off"]
                           if bad else []})
        return {"seeds": [1073741824], "scales": [1.0, 1000.0, 0.001], "checks": checks}
    return recheck


def validate(run: Path, speed: dict[int, dict[str, float]], *, fail: set[tuple[int, str]] = frozenset(),
             recheck: Any = "given", **kw: Any) -> Validation:
    ids = sorted(speed)
    return validate_run(run, candidates=ids, top=len(ids), rounds=20, rep_ms=1, warmup_ms=1, alpha=0.01,
                        min_effect=0.5, measure=synthetic(speed), recheck=rechecked(fail) if recheck == "given"
                        else recheck, **kw)
