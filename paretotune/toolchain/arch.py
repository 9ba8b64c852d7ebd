"""Per-SM limits of the target GPUs, for theoretical occupancy without a GPU."""
from __future__ import annotations

from dataclasses import dataclass

from paretotune.errors import UserError


@dataclass(frozen=True)
class TargetArch:
    """A compile target (``sm_90`` → capability 90) with the per-SM limits the occupancy model needs."""

    capability: int
    registers_per_sm: int = 65536
    max_registers_per_thread: int = 255
    register_alloc_unit: int = 256  # registers are allocated per warp in units of this many
    shared_per_sm: int = 228 * 1024
    max_shared_per_block: int = 227 * 1024
    shared_alloc_unit: int = 128
    reserved_shared_per_block: int = 1024  # the CUDA runtime reserves 1 KiB per block on sm_80 and later
    max_warps_per_sm: int = 64
    max_blocks_per_sm: int = 32
    warp_size: int = 32

    @property
    def name(self) -> str:
        return f"sm_{self.capability}"

    @property
    def gpu_name(self) -> str:
        """The ``--gpu-name`` Triton passes to ptxas: the 'a' variant on sm_90 and later."""
        return f"sm_{self.capability}a" if self.capability >= 90 else f"sm_{self.capability}"


TARGETS: dict[str, TargetArch] = {
    "sm_80": TargetArch(80, shared_per_sm=164 * 1024, max_shared_per_block=163 * 1024),
    "sm_86": TargetArch(86, shared_per_sm=100 * 1024, max_shared_per_block=99 * 1024, max_warps_per_sm=48,
                        max_blocks_per_sm=16),
    "sm_89": TargetArch(89, shared_per_sm=100 * 1024, max_shared_per_block=99 * 1024, max_warps_per_sm=48,
                        max_blocks_per_sm=24),
    "sm_90": TargetArch(90),
    "sm_100": TargetArch(100),
}


def get_target(name: str) -> TargetArch:
    try:
        return TARGETS[name]
    except KeyError:
        raise UserError(f"unknown target '{name}' (known: {', '.join(TARGETS)})") from None
