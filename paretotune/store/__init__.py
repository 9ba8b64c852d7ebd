"""The run directory: campaign copy, append-only results, ACF files, run metadata, the loop's checkpoint."""
from paretotune.store.checkpoint import LoopCheckpoint, read_checkpoint
from paretotune.store.run_dir import ObjectiveColumn, RunDir, read_results

__all__ = ["LoopCheckpoint", "ObjectiveColumn", "RunDir", "read_checkpoint", "read_results"]
