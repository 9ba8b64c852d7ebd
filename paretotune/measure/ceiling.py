"""The practical ceiling of a memory-bound kernel: a device copy of as many bytes as the kernel's tensors hold,
timed by the same clock, in the same rounds, as the kernel's arms.

Nominal peak bandwidth is not reachable (the H200's copy runs at 3.96 of its 4.8 TB/s), so a kernel's headroom
is read against a copy: a kernel whose GPU time is already the copy's has none left for a config or an ACF to
find, and "no headroom" is then a finding, not a failed search. The bytes are the kernel's tensors (its
arguments and what it returns, each allocation counted once): the traffic of a kernel that reads and writes each
once. A kernel that reads a tensor many times (a matmul) is not memory-bound, and its fraction says so by being
small."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paretotune.kernels.base import Prepared


def tensor_bytes(*trees: Any) -> int:
    """Bytes of the distinct allocations among the tensors of ``trees`` (views of one allocation count once,
    by the largest extent seen)."""
    import torch

    from paretotune.compat.torch import tree_flatten

    extent: dict[tuple[str, int], int] = {}
    for tree in trees:
        for t in (leaf for leaf in tree_flatten(tree)[0] if isinstance(leaf, torch.Tensor)):
            key = (str(t.device), t.untyped_storage().data_ptr())
            extent[key] = max(extent.get(key, 0), t.numel() * t.element_size())
    return sum(extent.values())


def copy_arm(nbytes: int, device: str) -> Prepared:
    """A device-to-device copy that reads ``nbytes / 2`` and writes as many (``nbytes`` moved), bound like a
    kernel's arm so that the shape's clock times it."""
    import torch

    src = torch.zeros(max(nbytes // 2, 1), dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    return Prepared(launch=lambda: dst.copy_(src), reference=None, atol=0.0, rtol=0.0, kernel_name="device copy",
                    inputs={"src": src, "dst": dst}, output=dst)


def ceiling_record(nbytes: int, copy_ms: float) -> dict[str, Any]:
    """A shape's copy ceiling as validation stores it: ``nbytes`` moved in ``copy_ms`` (the median of the
    copy's per-round medians), and the bandwidth that is."""
    return {"bytes": nbytes, "copy_ms": copy_ms, "copy_gbps": gbps(nbytes, copy_ms)}


def bandwidth(ceiling: Mapping[str, Any], ms: float) -> dict[str, float | None]:
    """A call of ``ms`` against its shape's ceiling record: ``gbps`` (the kernel's bytes over ``ms``) and
    ``of_copy`` (the copy's time over ``ms``; 1.0: as fast as the copy). None where the record has no bytes or
    no copy time (its ``why_not`` says why)."""
    nbytes, copy_ms = ceiling.get("bytes"), ceiling.get("copy_ms")
    return {"gbps": gbps(nbytes, ms) if nbytes else None, "of_copy": copy_ms / ms if copy_ms else None}


def gbps(nbytes: int, ms: float) -> float:
    """Achieved bandwidth in GB/s (10^9 bytes per second)."""
    return nbytes / (ms * 1e-3) / 1e9
