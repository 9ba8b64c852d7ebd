"""validation.csv (written by ``paretotune validate``) as the report reads it: one verdict per row.

The control arm (baseline against itself) should never be "significant"; when it is, the machine was too
noisy for the other verdicts to be trusted, and the page says so.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from paretotune.errors import UserError

VALIDATION = "validation.csv"


def read_validation(run_dir: Path) -> pd.DataFrame | None:
    """The run's validation.csv, or None when the run was not validated; damage is a one-line UserError."""
    path = run_dir / VALIDATION
    if not path.exists():
        return None
    if not path.is_file():
        raise UserError(f"{path}: not a regular file")
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise UserError(f"{path}: not a readable CSV ({exc})") from None


def with_verdicts(validation: pd.DataFrame) -> pd.DataFrame:
    """validation.csv plus ``verdict``: faster | not significant | error | control ok | control flagged."""
    out = validation.copy()
    for name, default in (("role", "candidate"), ("significant", False), ("failed", ""), ("speedup", np.nan)):
        if name not in out.columns:
            out[name] = default
    out["failed"] = out["failed"].fillna("").astype(str)
    significant = out["significant"].astype(str).str.lower().isin(["true", "1"])
    error = ~np.isfinite(pd.to_numeric(out["speedup"], errors="coerce").to_numpy(dtype=float))
    control = out["role"].astype(str).eq("control")
    out["verdict"] = np.select(
        [control & significant, control, error, significant],
        ["control flagged", "control ok", "error", "faster"], default="not significant")
    out["significant"] = significant
    return out


def has_speedups(validation: pd.DataFrame) -> bool:
    """Whether any row has a finite speedup (else the validation plot is not drawn)."""
    return bool(np.isfinite(pd.to_numeric(validation["speedup"], errors="coerce").to_numpy(dtype=float)).any())
