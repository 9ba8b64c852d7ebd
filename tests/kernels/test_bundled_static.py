"""Every bundled kernel compiles on a CPU to sm_90 PTX and assembles with ptxas 13.3, with and without ACFs."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kernel_cases import BUNDLED, Bundled

from paretotune.errors import CandidateFailure
from paretotune.kernels.base import KernelPTX, validate_config
from paretotune.toolchain.arch import TARGETS
from paretotune.toolchain.ptxas import BuildStats, Ptxas, build_ptx

SM90 = TARGETS["sm_90"]
IDS = [b.name for b in BUNDLED]
_PTX: dict[str, KernelPTX] = {}


def default_ptx(kernel: Bundled) -> KernelPTX:
    """The default config's PTX, compiled once per session (ACFs act only in ptxas)."""
    if kernel.name not in _PTX:
        adapter = kernel.adapter()
        shape = kernel.shape_record()
        _PTX[kernel.name] = adapter.compile_ptx(adapter.default_config(shape), shape, SM90)
    return _PTX[kernel.name]


def build(ptxas: Ptxas, kptx: KernelPTX, acf: Path | None) -> BuildStats:
    return build_ptx(ptxas, kptx.ptx, SM90, acf, kernel_name=kptx.kernel_name, num_warps=kptx.num_warps,
                     dynamic_shared=kptx.dynamic_shared, timeout_s=60)


@pytest.fixture(scope="module")
def acf_builds(ptxas: Ptxas, sampled_acfs: list[Path]) -> dict[str, list[BuildStats]]:
    """Each kernel's default PTX built with each sampled ACF (a rejected ACF fails the fixture loudly)."""
    return {k.name: [build(ptxas, default_ptx(k), acf) for acf in sampled_acfs] for k in BUNDLED}


@pytest.mark.parametrize("kernel", BUNDLED, ids=IDS)
def test_spec_is_consistent(kernel: Bundled) -> None:
    spec = kernel.spec()
    adapter = kernel.adapter()
    # the default lies in the space
    validate_config(adapter.space(), adapter.default_config(kernel.shape_record()), kernel.name)
    assert all(len(values) >= 1 for values in adapter.space().values())
    assert kernel.shape in spec.shapes and 0 < spec.atol < 1 and 0 < spec.rtol < 1


@pytest.mark.parametrize("kernel", BUNDLED, ids=IDS)
def test_default_compiles_to_sm90_ptx(kernel: Bundled, ptxas: Ptxas) -> None:
    kptx = default_ptx(kernel)
    adapter = kernel.adapter()
    expected = adapter.kernel_name if hasattr(adapter, "kernel_name") else kernel.spec().fn.__name__
    assert kptx.kernel_name == expected
    assert f".visible .entry {expected}(" in kptx.ptx
    assert ".target sm_90a" in kptx.ptx
    assert kptx.num_warps == adapter.default_config(kernel.shape_record())["num_warps"]
    assert f".reqntid {32 * kptx.num_warps}" in kptx.ptx  # the config's warps reached the compiled kernel
    stats = build(ptxas, kptx, None)
    assert stats.registers > 0 and stats.num_warps == kptx.num_warps


@pytest.mark.parametrize("kernel", BUNDLED, ids=IDS)
def test_sampled_acfs_are_accepted(kernel: Bundled, acf_builds: dict[str, list[BuildStats]]) -> None:
    assert all(s.registers > 0 for s in acf_builds[kernel.name])


def test_some_acf_changes_register_allocation(ptxas: Ptxas, acf_builds: dict[str, list[BuildStats]]) -> None:
    changed: dict[str, Any] = {}
    for kernel in BUNDLED:
        baseline = build(ptxas, default_ptx(kernel), None).registers
        regs = [s.registers for s in acf_builds[kernel.name]]
        if any(r != baseline for r in regs):
            changed[kernel.name] = (baseline, regs)
    assert changed, "no sampled ACF changed the register count of any bundled kernel: are the controls applied?"


def test_ptxas_rejects_a_file_that_is_not_an_acf(ptxas: Ptxas, tmp_path: Path) -> None:
    """The negative control: the ACF really reaches ptxas (garbage is refused, not ignored)."""
    bogus = tmp_path / "bogus.acf"
    bogus.write_bytes(b"not a controls file")
    with pytest.raises(CandidateFailure, match="ptxas exited"):
        build(ptxas, default_ptx(BUNDLED[0]), bogus)


def test_a_helion_kernel_built_on_a_cpu_takes_maxnreg_as_its_nvidia_target_would(ptxas: Ptxas) -> None:
    """Helion asks CUDA whether the GPU takes ``maxnreg``; without a GPU it answered no and dropped it from its
    ConfigSpec, the config and the launch. paretotune answers for the NVIDIA target (compat/helion.py), so a
    static campaign on a CPU caps registers with it as a GPU host's build does."""
    kernel = BUNDLED[1]  # helion_rms_norm
    adapter, shape = kernel.adapter(), kernel.shape_record()
    persistent = {**adapter.default_config(shape), "pid_type": "persistent_interleaved"}
    free = build(ptxas, adapter.compile_ptx(persistent, shape, SM90), None)
    cap = 32
    capped_ptx = adapter.compile_ptx({**persistent, "maxnreg": cap}, shape, SM90)
    assert f".maxnreg {cap}" in capped_ptx.ptx
    capped = build(ptxas, capped_ptx, None)
    assert capped.registers <= cap < free.registers
    assert "maxnreg" in [key for key, _, _ in adapter.config_spec(shape).flat_key_layout()]  # Helion's own search too
