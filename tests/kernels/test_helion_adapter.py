"""The Helion adapter on a CPU: codegen from meta tensors, config and ACF plumbing, AOT compile to PTX."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from paretotune.errors import UserError
from paretotune.kernels.bundled.helion_rms_norm import helion_rms_norm
from paretotune.kernels.bundled.helion_softmax import helion_softmax
from paretotune.kernels.helion import HelionAdapter, HelionKernel, import_helion
from paretotune.kernels.registry import adapter_for
from paretotune.records import Shape
from paretotune.toolchain.arch import TARGETS
from paretotune.toolchain.ptxas import Ptxas, build_ptx

SM90 = TARGETS["sm_90"]
SQUARE = Shape(label="square", params={"M": 4096, "N": 4096})
helion = import_helion()


def plain_scale(x: torch.Tensor) -> torch.Tensor:
    """An undecorated function: the adapter wraps it in ``helion.kernel(static_shapes=True)``."""
    out = torch.empty_like(x)
    for tile in helion.language.tile(x.size()):
        out[tile] = x[tile] * 2.0
    return out


def _scale_inputs(shape: dict, device: str, seed: int) -> dict:
    """Seeded random data (torch.empty may hold stale memory, NaN included, so a reference check would
    depend on what ran before); on the meta device only the shape matters."""
    n = int(shape["N"])
    if device == "meta":
        return {"x": torch.empty(n, dtype=torch.float32, device="meta")}
    x = torch.randn(n, dtype=torch.float32, generator=torch.Generator().manual_seed(seed))
    return {"x": x.to(device)}


def _scale_inputs_without_meta(shape: dict, device: str, seed: int) -> dict:
    if device == "meta":
        raise NotImplementedError("this spec makes real tensors only")
    return _scale_inputs(shape, device, seed)


plain_spec = HelionKernel(fn=plain_scale, inputs=_scale_inputs, args=lambda t, shape: (t["x"],),
                          reference=lambda t: t["x"] * 2, space={"block_sizes": [[256], [1024]], "num_warps": [4]},
                          default={"block_sizes": [1024], "num_warps": 4})


def softmax_adapter() -> HelionAdapter:
    adapter = adapter_for(helion_softmax, "helion_softmax", "test")
    assert isinstance(adapter, HelionAdapter)
    return adapter


def test_registry_gives_the_helion_adapter_and_rejects_other_objects() -> None:
    assert softmax_adapter().space() == helion_softmax.space
    with pytest.raises(UserError, match="not a TritonKernel or HelionKernel"):
        adapter_for(helion_softmax.fn, "softmax", "test")


def test_kernel_name_is_helion_prefixed_function_name() -> None:
    assert softmax_adapter().kernel_name == "_helion_softmax"
    assert adapter_for(helion_rms_norm, "helion_rms_norm", "test").kernel_name == "_helion_rms_norm"


@pytest.mark.parametrize("num_warps", [4, 16])
def test_generated_source_carries_the_config(num_warps: int) -> None:
    config = {**helion_softmax.default, "num_warps": num_warps, "block_sizes": [2]}
    source = softmax_adapter().triton_source(config, SQUARE)
    assert "def _helion_softmax(" in source
    assert f"num_warps={num_warps}" in source
    assert "_BLOCK_SIZE_0 = tl.constexpr(2)" in source
    assert "ptx_options" not in source  # no ACF, no extra ptxas flags


def test_acf_reaches_the_ptxas_options(tmp_path: Path) -> None:
    acf = tmp_path / "0123abcd.acf"
    source = softmax_adapter().triton_source(helion_softmax.default, SQUARE, acf)
    assert f"ptx_options='--apply-controls {acf.resolve()}'" in source


def test_acf_path_with_a_space_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must not contain spaces"):
        softmax_adapter().triton_source(helion_softmax.default, SQUARE, tmp_path / "a b" / "x.acf")


def test_compile_follows_the_config(ptxas: Ptxas) -> None:
    adapter = softmax_adapter()
    regs = {}
    for warps in (4, 16):
        config = {**helion_softmax.default, "num_warps": warps}
        kptx = adapter.compile_ptx(config, SQUARE, SM90)
        assert kptx.kernel_name == "_helion_softmax" and kptx.num_warps == warps
        assert f".reqntid {32 * warps}" in kptx.ptx
        regs[warps] = build_ptx(ptxas, kptx.ptx, SM90, None, kernel_name=kptx.kernel_name, num_warps=warps,
                                dynamic_shared=kptx.dynamic_shared).registers
    assert regs[4] > regs[16]  # a 4096-wide row over 4x fewer threads holds 4x more values per thread


def test_persistent_pid_type_compiles_without_a_gpu() -> None:
    import helion.runtime

    original = helion.runtime.get_num_sm
    config = {**helion_softmax.default, "pid_type": "persistent_blocked"}
    adapter = softmax_adapter()
    assert "helion.runtime.get_num_sm(" in adapter.triton_source(config, SQUARE)
    with pytest.raises(AssertionError):  # what the patch is for: no SM count on a CPU
        original(torch.device("cpu"))
    kptx = adapter.compile_ptx(config, SQUARE, SM90)
    assert ".visible .entry _helion_softmax(" in kptx.ptx
    assert helion.runtime.get_num_sm is original  # the patch does not leak


def test_undecorated_function_is_wrapped(ptxas: Ptxas) -> None:
    adapter = HelionAdapter("plain_spec", plain_spec)
    assert adapter.kernel_name == "_helion_plain_scale"
    kptx = adapter.compile_ptx(plain_spec.default, Shape(label="n", params={"N": 1 << 20}), SM90)
    stats = build_ptx(ptxas, kptx.ptx, SM90, None, kernel_name=kptx.kernel_name, num_warps=kptx.num_warps,
                      dynamic_shared=kptx.dynamic_shared)
    assert stats.registers > 0


def test_invalid_configs_raise() -> None:
    """Helion validates configs itself; the static job turns these exceptions into failed records."""
    with pytest.raises(helion.exc.InvalidConfig, match="bogus"):
        softmax_adapter().compile_ptx({**helion_softmax.default, "bogus": 3}, SQUARE, SM90)
    with pytest.raises(AssertionError, match="power of 2"):
        softmax_adapter().compile_ptx({**helion_softmax.default, "num_warps": 3}, SQUARE, SM90)


def test_meta_codegen_equals_cpu_tensor_codegen() -> None:
    """The CPU-tensor fallback generates exactly what the meta path does."""
    adapter = softmax_adapter()
    args = (torch.randn(4096, 4096, dtype=torch.float16),)
    for config in (helion_softmax.default, {**helion_softmax.default, "pid_type": "persistent_interleaved",
                                            "block_sizes": [2], "reduction_loops": [512]}):
        on_cpu = adapter.kernel.bind(args).to_triton_code(adapter.helion_config(config))
        assert adapter.triton_source(config, SQUARE) == on_cpu


def test_falls_back_to_cpu_tensors_when_meta_fails() -> None:
    spec = HelionKernel(fn=plain_scale, inputs=_scale_inputs_without_meta, args=plain_spec.args,
                        reference=plain_spec.reference, space=plain_spec.space, default=plain_spec.default)
    adapter = HelionAdapter("no_meta", spec)
    kptx = adapter.compile_ptx(spec.default, Shape(label="n", params={"N": 1 << 16}), SM90)
    assert adapter.aot.device == "cpu" and ".visible .entry _helion_plain_scale(" in kptx.ptx


def test_ahead_of_time_inputs_are_made_once_per_shape() -> None:
    """With the CPU fallback each compile would otherwise fill a real input tensor again (~0.5 s for 32M)."""
    made: list[str] = []

    def counting(shape: dict, device: str, seed: int) -> dict:
        made.append(device)
        return _scale_inputs_without_meta(shape, device, seed)

    spec = HelionKernel(fn=plain_scale, inputs=counting, args=plain_spec.args, reference=plain_spec.reference,
                        space=plain_spec.space, default=plain_spec.default)
    adapter = HelionAdapter("counting", spec)
    for config in ({"block_sizes": [256], "num_warps": 4}, {"block_sizes": [1024], "num_warps": 4}):
        for n in (1 << 16, 1 << 18):
            adapter.compile_ptx(config, Shape(label=f"n{n}", params={"N": n}), SM90)
    assert adapter.aot.device == "cpu"  # this spec refuses meta tensors
    assert made == ["meta", "cpu", "cpu"]  # one failed meta try, then one CPU input per shape
