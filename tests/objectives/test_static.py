"""Static objectives: the build they read is the build Triton launches, and the occupancy model is right."""
from __future__ import annotations

import contextlib
import io
import struct
from pathlib import Path

import pytest

from paretotune.objectives.base import ShapeMeasurement
from paretotune.objectives.occupancy_model import theoretical_occupancy
from paretotune.objectives.static import Registers, SharedMemory, SpillBytes, TheoreticalOccupancy
from paretotune.records import Shape
from paretotune.toolchain.arch import get_target
from paretotune.toolchain.ptxas import BuildStats, build_ptx, export_for_triton, find_ptxas, parse_ptxas_log

SM90 = get_target("sm_90")


def _build(regs: int, warps: int, smem: int = 0) -> BuildStats:
    return BuildStats(registers=regs, spill_stores=0, spill_loads=0, stack_frame=0, static_shared=0,
                      dynamic_shared=smem, num_warps=warps, compile_s=0.0)


def _elf_sections(blob: bytes) -> dict[str, bytes]:
    """Section name -> contents of a 64-bit little-endian ELF (a cubin)."""
    (shoff,) = struct.unpack_from("<Q", blob, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", blob, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + i * entsize) for i in range(count)]
    names = blob[headers[names_index][4]:headers[names_index][4] + headers[names_index][5]]
    out = {}
    for name_at, kind, _flags, _addr, offset, size, *_ in headers:
        name = names[name_at:names.index(b"\0", name_at)].decode()
        out[name] = b"" if kind == 8 else blob[offset:offset + size]  # SHT_NOBITS has no bytes in the file
    return out


@pytest.mark.parametrize(("regs", "warps", "smem", "expected"), [
    (167, 4, 16, 0.1875),     # 168*32 -> 5632 regs/warp (256-unit): 11 warps fit -> 2 blocks of 4 warps
    (157, 4, 0, 0.1875),      # 160*32 = 5120: 12 warps -> 3 blocks -> 12/64
    (30, 32, 0, 1.0),         # 1024 regs/warp: 64 warps fit -> 2 blocks of 32
    (255, 1, 0, 0.125),       # 8192 regs/warp: 8 warps
    (64, 16, 0, 0.5),         # 2048 regs/warp: 32 warps -> 2 blocks of 16
    (32, 4, 100 * 1024, 0.125),  # shared memory: 228 KiB / (100 KiB + 1 KiB reserved) -> 2 blocks
    (32, 1, 0, 0.5),          # the 32-blocks-per-SM limit: 32 blocks of 1 warp
])
def test_theoretical_occupancy_matches_the_occupancy_calculator(regs: int, warps: int, smem: int,
                                                                  expected: float) -> None:
    assert theoretical_occupancy(_build(regs, warps, smem), SM90) == pytest.approx(expected)


def test_too_much_shared_memory_means_zero_occupancy() -> None:
    assert theoretical_occupancy(_build(32, 4, 228 * 1024), SM90) == 0.0


def test_objectives_read_the_build_with_their_directions() -> None:
    b = BuildStats(registers=96, spill_stores=48, spill_loads=60, stack_frame=48, static_shared=1024,
                   dynamic_shared=4096, num_warps=8, compile_s=0.1)
    m = ShapeMeasurement(shape="s", target=SM90, build=b)
    assert Registers().value(m) == 96 and Registers.direction == "min"
    assert SpillBytes().value(m) == 108 and SpillBytes.direction == "min"
    assert SharedMemory().value(m) == 5120
    assert TheoreticalOccupancy().value(m) == pytest.approx(100 * 0.25) and TheoreticalOccupancy.direction == "max"
    with pytest.raises(ValueError, match="no ptxas build"):
        Registers().value(ShapeMeasurement(shape="s", target=SM90))


# A CompileIQ sample whose build differs unless ptxas gets Triton's --regAllocOptLevel=2 as well (triton 3.9: 2 of
# 120 samples did, benchmarks/results/static_build_devbox.json): a random sample alone rarely finds one
REG_ALLOC_SENSITIVE_ACF = Path(__file__).resolve().parents[1] / "fixtures" / "acfs" / "regalloc_sensitive.acf"


@pytest.fixture(params=["sampled", "regalloc_sensitive"])
def launch_acf(request: pytest.FixtureRequest, sampled_acf: Path) -> Path:
    return sampled_acf if request.param == "sampled" else REG_ALLOC_SENSITIVE_ACF


def test_static_build_is_the_build_triton_launches(tmp_path: Path, launch_acf: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Our ptxas -v build of the kernel's PTX with an ACF has the same machine code and resource attributes as the
    cubin Triton compiles with ``ptx_options='--apply-controls ACF'``, and Triton's own ptxas log reports the
    same resource usage."""
    sampled_acf = launch_acf
    ptxas = find_ptxas()
    export_for_triton(ptxas)
    from paretotune.kernels.bundled.softmax import triton_softmax
    from paretotune.kernels.triton import TritonAdapter
    from paretotune.kernels.triton_jit import compile_like_jit

    # fresh compiles on both sides: a cache hit returns PTX whose debug info names the paths of the checkout
    # that first compiled it (Triton's cache key ignores file paths)
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    adapter = TritonAdapter("softmax", triton_softmax)
    shape = Shape("wide", {"M": 4096, "N": 16384})
    kptx = adapter.compile_ptx({"num_warps": 4, "num_stages": 1}, shape, SM90)
    ours = build_ptx(ptxas, kptx.ptx, SM90, sampled_acf, kernel_name=kptx.kernel_name, num_warps=4,
                     dynamic_shared=kptx.dynamic_shared)
    monkeypatch.setenv("TRITON_DUMP_PTXAS_LOG", "1")
    args = adapter._ordered_args(triton_softmax.inputs(shape.params, "meta", 0), shape, {"num_warps": 4})
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        theirs = compile_like_jit(triton_softmax.fn, args, {"num_warps": 4, "num_stages": 1,
                                                            "ptx_options": f"--apply-controls {sampled_acf}"}, SM90)
    assert theirs.asm["ptx"] == kptx.ptx
    cubin = tmp_path / "ours.cubin"
    import subprocess

    from paretotune.toolchain.ptxas import ptxas_flags

    (tmp_path / "k.ptx").write_text(kptx.ptx)
    subprocess.run([str(ptxas.path), *ptxas_flags(SM90, sampled_acf), str(tmp_path / "k.ptx"), "-o", str(cubin)],
                   check=True, capture_output=True)
    # the kernel's machine code and its resource attributes (.nv.info) must be identical; other sections may
    # name the input file, which differs (Triton writes its PTX to a temporary file of its own)
    ours_s, theirs_s = _elf_sections(cubin.read_bytes()), _elf_sections(theirs.asm["cubin"])
    for name in (f".text.{kptx.kernel_name}", f".nv.info.{kptx.kernel_name}"):
        assert name in ours_s and ours_s[name] == theirs_s.get(name), f"{name} differs"
    if "Used" in log.getvalue():  # Triton prints its ptxas log when TRITON_DUMP_PTXAS_LOG is honoured
        regs, st, ld, _, _ = parse_ptxas_log(log.getvalue(), kptx.kernel_name)
        assert (regs, st, ld) == (ours.registers, ours.spill_stores, ours.spill_loads)
    assert ours.dynamic_shared == int(theirs.metadata.shared)


def test_acfs_change_the_build(sampled_acfs: list[Path]) -> None:
    """The reason the product exists: on the quickstart kernel, ACFs move the register count."""
    ptxas = find_ptxas()
    export_for_triton(ptxas)
    from paretotune.kernels.bundled.softmax import triton_softmax
    from paretotune.kernels.triton import TritonAdapter

    kptx = TritonAdapter("softmax", triton_softmax).compile_ptx({"num_warps": 4}, Shape("w", {"M": 4096, "N": 16384}),
                                                                 SM90)
    regs = {build_ptx(ptxas, kptx.ptx, SM90, acf, kernel_name=kptx.kernel_name, num_warps=4, dynamic_shared=0).registers
            for acf in [None, *sampled_acfs]}
    assert len(regs) > 1
