"""Shared test setup: the offline CompileIQ search space, and skipping GPU tests where there is no GPU."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from paretotune.toolchain.ciq_space import checkout_copy

ROOT = Path(__file__).resolve().parents[1]
# ../shared/compileiq beside the checkout, the copy paretotune reads itself when the variable is unset; set here
# too for the tests that hand CompileIQ a PtxasSearchSpace directly
_SHARED_SPACES = checkout_copy()
if "CIQ_SEARCH_SPACES_DIR" not in os.environ and _SHARED_SPACES is not None:
    os.environ["CIQ_SEARCH_SPACES_DIR"] = str(_SHARED_SPACES)
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

# no per-example time limit for property tests: CI's two cores are shared with process pools and Ray, and a
# pause there is not a failure of the property (every @settings in the tests says the same)
settings.register_profile("paretotune", deadline=None)
settings.load_profile("paretotune")


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001 - no torch, no GPU
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _keep_tritons_ptxas(monkeypatch: pytest.MonkeyPatch) -> None:
    """An in-process ``paretotune run`` points Triton at its ptxas through the environment; a test that runs
    one with a ptxas stand-in (one that hangs on ACFs) must not leave it there for the tests after it (on the
    H200 the GPU tests after the hang test hung in the stand-in, 2026-11-30)."""
    for name in ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH", "PARETOTUNE_PTXAS"):
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])  # restored to this value after the test
        else:  # recorded as absent, so removed again after the test
            monkeypatch.setenv(name, "")
            monkeypatch.delenv(name)
