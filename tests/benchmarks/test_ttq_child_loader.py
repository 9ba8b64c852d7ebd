"""The time-to-quality benchmark's tool children load a kernel file so that Helion can bind it: Helion resolves a
kernel's module-level names through ``sys.modules[fn.__module__]``, and a file executed without an entry there
fails to bind on the first global its body reads (Helion's arm of rms_norm_dynamic_per_token_quant did, in 0.2 s,
and its row showed an error instead of Helion's search)."""
from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

KERNEL_FILE = '''
import torch
import helion
import helion.language as hl

_OUT_DTYPE = torch.float32
LOADS = [1]


@helion.kernel(static_shapes=True)
def doubled(x: torch.Tensor) -> torch.Tensor:
    out_dtype = _OUT_DTYPE  # a module-level name read in the kernel's body
    out = torch.empty(x.shape, dtype=out_dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile].to(out_dtype) * 2
    return out
'''


@pytest.fixture()
def child_load(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], Any]]:
    """The children's ``load``, from the benchmark's own text, as each child runs it."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("bench_time_to_quality", BENCHMARKS / "bench_time_to_quality.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.CHILD_LOADER in bench.HELION_CHILD and bench.CHILD_LOADER in bench.TRITON_CHILD
    namespace: dict[str, Any] = {}
    exec(bench.CHILD_LOADER, namespace)  # noqa: S102 - the benchmark's own child code
    before = set(sys.modules)
    yield namespace["load"]
    for name in set(sys.modules) - before:
        if name.startswith("ttq_"):
            del sys.modules[name]


def test_a_kernel_reading_a_module_global_binds_once_loaded(child_load: Callable[[str], Any],
                                                             tmp_path: Path) -> None:
    import torch

    path = tmp_path / "own_kernel.py"
    path.write_text(KERNEL_FILE)
    module = child_load(str(path))
    bound = module.doubled.bind((torch.empty(64, dtype=torch.bfloat16, device="meta"),))
    assert bound is not None
    assert sys.modules[module.doubled.fn.__module__] is module


def test_the_file_runs_once_however_often_the_child_asks(child_load: Callable[[str], Any], tmp_path: Path) -> None:
    path = tmp_path / "own_kernel.py"
    path.write_text(KERNEL_FILE)
    first = child_load(str(path))
    first.LOADS.append(1)
    assert child_load(str(path)) is first and first.LOADS == [1, 1]


def test_a_file_that_fails_leaves_no_half_made_module(child_load: Callable[[str], Any], tmp_path: Path) -> None:
    path = tmp_path / "broken_kernel.py"
    path.write_text("raise ValueError('bad kernel file')\n")
    with pytest.raises(ValueError, match="bad kernel file"):
        child_load(str(path))
    assert "ttq_broken_kernel" not in sys.modules
