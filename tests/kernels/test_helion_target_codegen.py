"""The pool generates Helion code from meta tensors; the GPU worker from CUDA tensors. Where Helion's codegen
asks the device whether a config's accesses go through the TMA async proxy (then it adds fences around
cross-thread syncs), :func:`target_codegen` makes the meta bind answer as the sm_90 target does, so the pool's
build is the GPU's build (on the H200, three pretuned quant kernels differed in exactly those fences:
benchmarks/check_build_keys.py). Real Helion, bound to meta tensors, no GPU."""
from __future__ import annotations

from typing import Any

import pytest

from paretotune.kernels.helion import HelionAdapter
from paretotune.kernels.helion_aot import target_codegen
from paretotune.kernels.helion_space import device_features
from paretotune.records import Shape

device_function = pytest.importorskip("helion._compiler.device_function")
SHAPE = Shape(label="s", params={"M": 256, "N": 1024, "dtype": "bfloat16"})


def _decisions(config: dict[str, Any], capability: int | None) -> list[bool]:
    """Helion's answer for each DeviceFunction made while generating ``config`` from meta tensors."""
    from paretotune.kernels.bundled.helion_rms_norm import helion_rms_norm

    adapter = HelionAdapter("rms_norm", helion_rms_norm)
    seen: list[bool] = []
    inner = device_function._selects_tma_access

    def spy(cfg: Any) -> bool:
        answer = inner(cfg)
        seen.append(bool(answer))
        return answer

    device_function._selects_tma_access = spy
    try:
        bound, _ = adapter.aot.bind(SHAPE, 132)
        with device_features(True):
            if capability is None:
                bound.to_triton_code(adapter.helion_config(config))
            else:
                with target_codegen(capability):
                    bound.to_triton_code(adapter.helion_config(config))
    finally:
        device_function._selects_tma_access = inner
    return seen


TD = {"block_sizes": [2], "num_warps": 4, "num_stages": 1, "indexing": "tensor_descriptor"}


def test_meta_bind_answers_as_the_sm90_target() -> None:
    assert _decisions(TD, None) == [False]  # Helion alone: a meta device has no TMA
    assert _decisions(TD, 90) == [True]  # as the CUDA sm_90 bind answers
    assert _decisions(TD, 80) == [False]  # no TMA before sm_90
    assert _decisions({**TD, "indexing": "pointer"}, 90) == [False]
    assert device_function._selects_tma_access.__name__ == "_selects_tma_access"  # restored


def test_the_pool_precompile_generates_as_the_target(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU pool's build (``precompile``) goes through :func:`target_codegen` with the campaign's target."""
    from paretotune.kernels.bundled.helion_rms_norm import helion_rms_norm
    from paretotune.toolchain.arch import TargetArch
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    export_for_triton(find_ptxas())
    seen: list[bool] = []
    inner = device_function._selects_tma_access
    monkeypatch.setattr(device_function, "_selects_tma_access", lambda cfg: seen.append(bool(inner(cfg))) or seen[-1])
    adapter = HelionAdapter("rms_norm", helion_rms_norm)
    with device_features(True):
        adapter.precompile(TD, SHAPE, None, TargetArch(90))
    assert seen == [True]
