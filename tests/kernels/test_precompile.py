"""The CPU pool's precompile fills Triton's disk cache with the build the GPU launch will look up.

Without it, the GPU worker compiles each candidate itself (Triton + ptxas with the ACF) while the GPU idles.
These tests check the cache entry on a CPU: the kernel's name, the ACF in ``ptx_options`` exactly as the
launch passes it, and a cubin; that a second precompile of the same candidate is a cache hit; and that the
PTX it returns is the no-ACF PTX (so one Triton compile per candidate serves both stages).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernel_cases import BUNDLED, Bundled, ptx_code

from paretotune.toolchain.arch import TARGETS

CASES = [b for b in BUNDLED if b.name in ("helion_softmax", "triton_layer_norm")]


def cache_entries(cache: Path, kernel_name: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in cache.glob(f"*/{kernel_name}.json")]


@pytest.mark.parametrize("kernel", CASES, ids=[c.name for c in CASES])
def test_precompile_caches_the_acf_build(kernel: Bundled, sampled_acfs: list[Path], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    adapter = kernel.adapter()
    acf = sampled_acfs[0]
    kernel_name = adapter.kernel_name if hasattr(adapter, "kernel_name") else adapter.spec.fn.__name__
    kptx = adapter.precompile(adapter.default_config(kernel.shape_record()), kernel.shape_record(), acf,
                              TARGETS["sm_90"])
    entries = cache_entries(tmp_path / "cache", kernel_name)
    assert len(entries) == 1, entries
    applied = entries[0]["ptx_options"].split()
    assert applied[0] == "--apply-controls" and Path(applied[1]).resolve() == acf.resolve()
    assert list((tmp_path / "cache").glob(f"*/{kernel_name}.cubin"))

    adapter.precompile(adapter.default_config(kernel.shape_record()), kernel.shape_record(), acf, TARGETS["sm_90"])
    assert len(cache_entries(tmp_path / "cache", kernel_name)) == 1  # the same key: found, not rebuilt

    adapter.precompile(adapter.default_config(kernel.shape_record()), kernel.shape_record(), None, TARGETS["sm_90"])
    without = [e for e in cache_entries(tmp_path / "cache", kernel_name) if not e.get("ptx_options")]
    assert len(without) == 1  # no ACF: another entry, without controls

    plain = adapter.compile_ptx(adapter.default_config(kernel.shape_record()), kernel.shape_record(), TARGETS["sm_90"])
    # the ACF acts only in ptxas: the static stage can take its PTX from the precompile (Helion's generated
    # module differs by the ptx_options string, so only its debug line info moves)
    assert ptx_code(kptx.ptx) == ptx_code(plain.ptx) and kptx.num_warps == plain.num_warps
    assert (kptx.kernel_name, kptx.dynamic_shared) == (plain.kernel_name, plain.dynamic_shared)
