"""The store tests' one real run directory, made once per session and copied by each test that changes it."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reliability.conftest import cli, cli_env, small_quickstart


@pytest.fixture(scope="session")
def small_real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real CPU run made once per session (quickstart softmax, CompileIQ ACFs, real ptxas; one generation
    of 9, one worker) through the CLI in a subprocess; tests copy it before changing anything. Its campaign
    file is ``quickstart-small.yaml`` next to it."""
    folder = tmp_path_factory.mktemp("small-real-run")
    campaign = small_quickstart(folder, generations=1, pool_size=9, workers=1)
    out = folder / "run"
    proc = subprocess.run(cli("run", str(campaign), "--out", str(out), "--quiet"), env=cli_env(),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len((out / "results.jsonl").read_text().splitlines()) >= 10  # baseline + 9 (+ twins)
    return out
