"""The run directory: campaign copy, append-only results, ACF files, run metadata."""
from paretotune.store.run_dir import ObjectiveColumn, RunDir, read_results

__all__ = ["ObjectiveColumn", "RunDir", "read_results"]
