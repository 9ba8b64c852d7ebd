"""Shared fixtures of the kernel tests: ptxas 13.3 for Triton, sampled ACFs, the bundled kernels' adapters.

Triton reads ``TRITON_PTXAS_PATH`` once, so it is exported here, before any test module imports Triton.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from paretotune.toolchain.ptxas import Ptxas, export_for_triton, find_ptxas

PTXAS = find_ptxas()
export_for_triton(PTXAS)  # with TRITON_DEFAULT_FP_FUSION, as `paretotune run` sets it (silences Triton 3.9)

HERE = Path(__file__).resolve().parent
N_ACFS = 6


@pytest.fixture(scope="session")
def ptxas() -> Ptxas:
    return PTXAS


@pytest.fixture(scope="session")
def sampled_acfs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """``N_ACFS`` ACFs drawn by CompileIQ from the ptxas 13.3 control space, stored by content hash."""
    from compileiq.ciq import Search
    from compileiq.search_spaces.compilers import PtxasSearchSpace
    from compileiq.types import SearchConfiguration, WorkerTypes

    from paretotune.toolchain.acf import AcfStore

    if not os.environ.get("CIQ_SEARCH_SPACES_DIR"):
        pytest.skip("set CIQ_SEARCH_SPACES_DIR to a folder with CompileIQ's ptxas 13.3 search space")
    config = SearchConfiguration(pool_size=max(N_ACFS, 6), generations=1, problem_type="min", num_objectives=1)
    tuner = Search(objective_function=lambda _c: None, search_space=PtxasSearchSpace(version="13.3"),
                   search_config=config, worker_type=WorkerTypes.MANUAL)
    store = AcfStore(tmp_path_factory.mktemp("acf"))
    paths = []
    for hex_string in tuner.sample(N_ACFS):
        record = store.put_hex(hex_string, ptxas_version="13.3", target="sm_90", source="compileiq")
        paths.append(store.path(record.sha256))
    return paths


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip this directory's ``gpu`` tests unless torch sees a CUDA device."""
    gpu_items = [item for item in items if "gpu" in item.keywords and HERE in Path(item.path).parents]
    if not gpu_items:
        return
    import torch

    if not torch.cuda.is_available():
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason="no CUDA device"))
