"""A real CPU quickstart run (CompileIQ ACFs, ptxas 13.3, static objectives) whose search added no-ACF twins."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.report.conftest import run_quickstart


@pytest.fixture(scope="session")
def twin_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_quickstart(tmp_path_factory.mktemp("twins") / "run", generations=2, pool_size=9)
