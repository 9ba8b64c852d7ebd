"""The run directory: campaign copy, append-only results, ACF files, run metadata, the loop's checkpoint."""
from paretotune.store.checkpoint import LoopCheckpoint, read_checkpoint
from paretotune.store.results import read_results
from paretotune.store.run_dir import ObjectiveColumn, RunDir

__all__ = ["LoopCheckpoint", "ObjectiveColumn", "RunDir", "read_checkpoint", "read_results"]
