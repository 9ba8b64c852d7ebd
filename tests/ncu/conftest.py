"""Shared fixtures of the ncu tests: recorded outputs, and a fake ncu binary for the runner tests."""
from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from paretotune.ncu.locate import Ncu

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "ncu"


@pytest.fixture
def fixture_text() -> object:
    def read(name: str) -> str:
        return (FIXTURES / name).read_text()

    return read


@pytest.fixture
def fake_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ncu:
    """An executable that runs tests/ncu/fake_ncu.py with this interpreter."""
    script = tmp_path / "bin" / "ncu"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{HERE / "fake_ncu.py"}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("FAKE_NCU_MODE", raising=False)
    monkeypatch.delenv("FAKE_NCU_REPLAY", raising=False)
    return Ncu(script, "2025.3.1.0")


@pytest.fixture
def kernels_dir() -> str:
    """Put on the child's sys.path so it can import ncu_fake_kernels."""
    return str(HERE)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip this directory's ``gpu`` tests unless torch sees a CUDA device and an ncu binary exists."""
    gpu_items = [item for item in items if "gpu" in item.keywords and HERE in Path(item.path).parents]
    if not gpu_items:
        return
    reason = _gpu_unavailable()
    if reason is not None:
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=reason))


def _gpu_unavailable() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    from paretotune.ncu.locate import find_ncu

    try:
        find_ncu()
    except Exception as exc:  # noqa: BLE001
        return f"no ncu: {exc}"
    return None
