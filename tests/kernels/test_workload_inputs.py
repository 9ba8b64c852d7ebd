"""The workload input factories give the pool's meta bind the same argument structure as the GPU's: distinct
tensors where the kernel takes distinct tensors. One meta tensor passed as both of scaled_mm's scales made Helion
generate code for aliased scales, so the GPU worker rebuilt every candidate (H200, 2026-12-01,
benchmarks/check_build_keys.py). The factories need no workload code: torch only."""
from __future__ import annotations

import pytest
import torch

from paretotune.kernels import workloads
from paretotune.kernels.workloads import WORKLOAD_SHAPES


@pytest.mark.parametrize("name", sorted(WORKLOAD_SHAPES))
def test_meta_arguments_are_distinct_tensors(name: str) -> None:
    shape = WORKLOAD_SHAPES[name][0]
    factory = getattr(workloads, name)
    meta = [a for a in factory(shape, "meta", 0) if isinstance(a, torch.Tensor)]
    assert len({id(a) for a in meta}) == len(meta), f"{name}: a meta tensor is passed twice"
    assert all(a.device.type == "meta" for a in meta)
