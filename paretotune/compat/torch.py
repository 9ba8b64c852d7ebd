"""torch's private names that paretotune uses: its pytree helpers, the profiler's raw Kineto records and its NVML
device count.

Checked against torch 2.11 (the GPU machine) and 2.13 (CPU): neither has a public pytree module
(``torch.utils.pytree`` does not exist), and ``torch.profiler.profile.events()`` gives averaged
``FunctionEvent`` objects without the CUPTI correlation ids the CUPTI clock needs.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any


def _pytree() -> ModuleType:
    from torch.utils import _pytree

    return _pytree


def tree_flatten(tree: Any) -> tuple[list[Any], Any]:
    """(leaves, spec) of a nest of tuples, lists and dicts (``torch.utils._pytree.tree_flatten``)."""
    return _pytree().tree_flatten(tree)


def tree_leaves(tree: Any) -> list[Any]:
    """The leaves of a nest, in order (``torch.utils._pytree.tree_leaves``)."""
    return list(_pytree().tree_leaves(tree))


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """The same nest with ``fn`` applied to each leaf (``torch.utils._pytree.tree_map``)."""
    return _pytree().tree_map(fn, tree)


def tree_unflatten(leaves: list[Any], spec: Any) -> Any:
    """The nest ``spec`` describes, filled with ``leaves`` (``torch.utils._pytree.tree_unflatten``)."""
    return _pytree().tree_unflatten(leaves, spec)


def treespec_dumps(spec: Any) -> str:
    """A nest's spec as text, for a JSON file (``torch.utils._pytree.treespec_dumps``)."""
    return str(_pytree().treespec_dumps(spec))


def treespec_loads(text: str) -> Any:
    """:func:`treespec_dumps`'s text back as a spec (``torch.utils._pytree.treespec_loads``)."""
    return _pytree().treespec_loads(text)


def kineto_events(prof: Any) -> list[Any]:
    """Every raw Kineto record of a finished ``torch.profiler.profile`` (``prof.profiler.kineto_results``): each
    with its name, device, start/end and correlation ids."""
    return list(prof.profiler.kineto_results.events())


def nvml_device_count() -> int:
    """The visible CUDA devices as NVML counts them (``CUDA_VISIBLE_DEVICES`` applied), never asking the CUDA
    driver; negative where NVML fails, or for MIG names, where torch's NVML check falls back to the driver
    (``torch.cuda._device_count_nvml``; -1 where this torch lacks it)."""
    import torch.cuda

    count = getattr(torch.cuda, "_device_count_nvml", None)
    try:
        return int(count()) if callable(count) else -1
    except Exception:  # noqa: BLE001 - NVML's library present but broken: as a failed discovery
        return -1


NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"


def availability_check_is_fork_safe() -> bool:
    """Whether ``torch.cuda.is_available()`` leaves this process's future forks able to use CUDA: with a CPU build
    of torch (nothing to ask), or with torch's NVML check on (``PYTORCH_NVML_BASED_CUDA_CHECK=1``) and NVML
    counting the devices; otherwise it asks the CUDA driver, and every process forked after that fails on its
    first CUDA call. False where torch is not imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    if torch.version.cuda is None:
        return True
    return os.environ.get(NVML_CHECK) == "1" and nvml_device_count() >= 0
