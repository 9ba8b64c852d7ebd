"""Theoretical occupancy as the CUDA occupancy calculator computes it, from one build's resource usage."""
from __future__ import annotations

from paretotune.toolchain.arch import TargetArch
from paretotune.toolchain.ptxas import BuildStats


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def blocks_per_sm(build: BuildStats, target: TargetArch) -> int:
    """Resident blocks per SM: the minimum over the warp, block, register and shared-memory limits."""
    warps = build.num_warps
    limits = [target.max_blocks_per_sm, target.max_warps_per_sm // warps]
    if build.registers > 0:
        regs_per_warp = _round_up(build.registers * target.warp_size, target.register_alloc_unit)
        warps_by_regs = target.registers_per_sm // regs_per_warp
        limits.append(warps_by_regs // warps)
    shared = build.static_shared + build.dynamic_shared
    if shared > 0:
        per_block = _round_up(shared + target.reserved_shared_per_block, target.shared_alloc_unit)
        limits.append(0 if shared > target.max_shared_per_block else target.shared_per_sm // per_block)
    return max(0, min(limits))


def theoretical_occupancy(build: BuildStats, target: TargetArch) -> float:
    """Fraction (0..1) of the SM's warp slots a kernel can keep resident."""
    blocks = blocks_per_sm(build, target)
    return blocks * build.num_warps / target.max_warps_per_sm
