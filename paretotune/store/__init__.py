"""The run directory: campaign copy, append-only results, ACF files, run metadata, the loop's checkpoint."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paretotune.store.checkpoint import LoopCheckpoint, read_checkpoint
    from paretotune.store.run_dir import read_results
    from paretotune.store.run_dir import ObjectiveColumn, RunDir

__all__ = ["LoopCheckpoint", "ObjectiveColumn", "RunDir", "read_checkpoint", "read_results"]
_WHERE = {"LoopCheckpoint": "paretotune.store.checkpoint", "read_checkpoint": "paretotune.store.checkpoint",
          "read_results": "paretotune.store.run_dir", "ObjectiveColumn": "paretotune.store.run_dir",
          "RunDir": "paretotune.store.run_dir"}


def __getattr__(name: str) -> Any:
    """Imported on first use: light modules (ACF files, workers, search engines) import
    :mod:`paretotune.store.atomic` and must not pay for pandas, which the run directory's readers need."""
    if name not in _WHERE:
        raise AttributeError(f"module 'paretotune.store' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_WHERE[name]), name)
