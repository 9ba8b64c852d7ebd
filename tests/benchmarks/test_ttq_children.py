"""The time-to-quality benchmark's tool children (its Helion arm) tune the kernel as shipped.

They load a kernel file so that Helion can bind it: Helion resolves a kernel's module-level names through
``sys.modules[fn.__module__]``, and a file executed without an entry there fails to bind on the first global its
body reads (Helion's arm of rms_norm_dynamic_per_token_quant did, in 0.2 s, and its row showed an error instead of
Helion's search). And they re-wrap a kernel with its own settings: Helion's AOT kernels are shipped with
``static_shapes=False``, and a re-wrap with ``static_shapes=True`` tunes other Triton code than the re-timing builds."""
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
def child(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The names the Helion child defines before it runs, from the benchmark's own text."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("bench_time_to_quality", BENCHMARKS / "bench_time_to_quality.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.CHILD_LOADER in bench.HELION_CHILD and bench.CHILD_LOADER in bench.TRITON_CHILD
    assert bench.SHIPPED_SETTINGS in bench.HELION_CHILD and bench.GUARDS in bench.HELION_CHILD
    namespace: dict[str, Any] = {}
    exec(bench.CHILD_LOADER + bench.SHIPPED_SETTINGS + bench.GUARDS, namespace)  # noqa: S102 - its own child code
    return namespace


@pytest.fixture()
def child_load(child: dict[str, Any]) -> Iterator[Callable[[str], Any]]:
    """The children's ``load``, as each child runs it; what it registered is removed after the test."""
    before = set(sys.modules)
    yield child["load"]
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
    assert not any(name.startswith("ttq_broken_kernel") for name in sys.modules)


SHIPPED_FILE = '''
import torch
import helion
import helion.language as hl


@helion.kernel(static_shapes=False, ignore_warnings=[helion.exc.TensorOperationInWrapper])
def added(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] + y[tile]
    return out
'''


def triton_code(kernel: Any, args: tuple[Any, ...]) -> str:
    bound = kernel.bind(args)
    return bound.to_triton_code(bound.config_spec.default_config())


def test_the_helion_arm_tunes_the_code_the_shipped_kernel_generates(child: dict[str, Any],
                                                                     child_load: Callable[[str], Any],
                                                                     tmp_path: Path) -> None:
    import helion
    import torch

    path = tmp_path / "shipped_kernel.py"
    path.write_text(SHIPPED_FILE)
    shipped = child_load(str(path)).added
    fn, kept = child["as_shipped"](shipped)
    assert kept["static_shapes"] is False and helion.exc.TensorOperationInWrapper in kept["ignore_warnings"]
    assert not any(name.startswith("autotune") for name in kept)
    args = tuple(torch.empty(4096, dtype=torch.float32, device="meta") for _ in range(2))
    shipped_code = triton_code(shipped, args)
    assert triton_code(helion.kernel(fn, **kept, autotune_effort="quick"), args) == shipped_code
    # the arm's earlier re-wrap tuned other code: constant strides, no mask
    assert triton_code(helion.kernel(fn, static_shapes=True), args) != shipped_code


def test_a_plain_function_is_tuned_with_static_shapes_as_paretotune_wraps_it(child: dict[str, Any]) -> None:
    def plain(x: Any) -> Any:
        return x

    assert child["as_shipped"](plain) == (plain, {"static_shapes": True})


def test_helion_keeps_its_guards_unless_the_arm_runs_it_in_process(child: dict[str, Any]) -> None:
    """Helion's arm runs with the guards Helion ships (a config compiled in a forked child with a timeout,
    benchmarked in a worker it can kill); ``--helion-in-process`` turns both off, and the arm records which ran."""
    import helion

    def doubled(x: Any) -> Any:
        return x

    shipped = helion.Settings()
    guarded = helion.kernel(doubled, **child["guard_settings"](False)).settings
    in_process = helion.kernel(doubled, **child["guard_settings"](True)).settings
    assert shipped.autotune_benchmark_subprocess and shipped.autotune_precompile
    for name in child["GUARDS"]:
        assert getattr(guarded, name) == getattr(shipped, name)
    assert in_process.autotune_benchmark_subprocess is False and in_process.autotune_precompile is None
