"""Helpers of the reliability tests: the CLI in a subprocess, ptxas stand-ins, and process-group bookkeeping."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from paretotune.cli import main

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("CIQ_SEARCH_SPACES_DIR", "/work/shared/compileiq")

QUICKSTART = (ROOT / "configs" / "quickstart.yaml").read_text()


def small_quickstart(folder: Path, *, generations: int, pool_size: int, workers: int,
                     extra_evaluation: str = "") -> Path:
    """configs/quickstart.yaml with a smaller budget (and optional evaluation settings)."""
    text = (QUICKSTART.replace("generations: 4", f"generations: {generations}")
            .replace("pool_size: 10", f"pool_size: {pool_size}")
            .replace("workers: 2", f"workers: {workers}{extra_evaluation}"))
    assert f"generations: {generations}" in text and f"workers: {workers}" in text
    path = folder / "quickstart-small.yaml"
    path.write_text(text)
    return path


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("TRITON_PTXAS_PATH", None)  # the CLI picks ptxas itself (and exports it for Triton)
    env.pop("TRITON_PTXAS_BLACKWELL_PATH", None)
    env.update(extra)
    return env


def cli(*args: str, env: dict[str, str] | None = None, **kw: object) -> list[str]:
    return [sys.executable, "-m", "paretotune.cli", *args]


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli(*args), env=env or cli_env(), cwd=ROOT, capture_output=True, text=True, check=False,
                          timeout=timeout)


@pytest.fixture(scope="session")
def real_ptxas() -> Path:
    from paretotune.toolchain.ptxas import find_ptxas

    saved = os.environ.pop("PARETOTUNE_PTXAS", None)
    try:
        return find_ptxas().path
    finally:
        if saved is not None:
            os.environ["PARETOTUNE_PTXAS"] = saved


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run the CLI in-process and return its one error line (exit code 2, nothing else on stderr)."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("paretotune: error: "), err
    return lines[0]


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group."""
    from paretotune.processes import group_members as members

    return members(pgid, zombies=False)
