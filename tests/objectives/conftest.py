from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def sampled_acfs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Four ACFs sampled by CompileIQ from the ptxas 13.3 space (offline copy)."""
    from compileiq.ciq import Search
    from compileiq.search_spaces.compilers import PtxasSearchSpace
    from compileiq.types import SearchConfiguration, WorkerTypes

    search = Search(objective_function=lambda _c: 0.0, search_space=PtxasSearchSpace(version="13.3"),
                    search_config=SearchConfiguration(problem_type="min", pool_size=8, generations=1),
                    worker_type=WorkerTypes.MANUAL)
    out = tmp_path_factory.mktemp("acfs")
    paths = []
    for i, hex_string in enumerate(search.sample(4)):
        path = out / f"a{i}.acf"
        path.write_bytes(bytes.fromhex(hex_string))
        paths.append(path)
    return paths


@pytest.fixture
def sampled_acf(sampled_acfs: list[Path]) -> Path:
    return sampled_acfs[0]
