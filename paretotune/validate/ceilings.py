"""Each validated arm's achieved bandwidth and its fraction of the shape's copy ceiling
(:mod:`paretotune.measure.ceiling`): how much headroom a memory-bound kernel had left to find."""
from __future__ import annotations

import math
import statistics
from typing import Any

import pandas as pd

from paretotune.measure.ceiling import bandwidth

BANDWIDTH_COLUMNS = ["gbps", "of_copy"]  # GB/s from the kernel's bytes; copy time / the arm's time (1.0: at it)


def add_bandwidth(table: pd.DataFrame, measured: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Fill :data:`BANDWIDTH_COLUMNS` of ``table`` (in place) from each arm's median time, and return per shape
    the ceiling with the baseline's figures beside it. A shape measured without a ceiling leaves its rows NaN
    and says why."""
    for name in BANDWIDTH_COLUMNS:
        table[name] = math.nan
    summary: dict[str, dict[str, Any]] = {}
    for shape, data in measured.items():
        found = data.get("ceiling") or {}
        medians = {k: statistics.median(v) for k, v in data["samples"].items() if v}
        if not found.get("bytes") or "baseline" not in medians:
            summary[shape] = {**found, "why_not": found.get("why_not") or "not measured"}
            continue
        for i in table.index[table["shape"] == shape]:
            ms = medians.get(str(int(table.at[i, "candidate_id"])))
            if ms:
                figures = bandwidth(found, ms)
                table.loc[i, BANDWIDTH_COLUMNS] = [figures[c] if figures[c] is not None else math.nan
                                                   for c in BANDWIDTH_COLUMNS]
        base = bandwidth(found, medians["baseline"])
        summary[shape] = {**found, "baseline_ms": medians["baseline"], "baseline_gbps": base["gbps"],
                          "baseline_of_copy": base["of_copy"]}
    return summary


def ceiling_line(found: dict[str, Any], best: tuple[int, float] | None) -> str:
    """'memory: 64.0 MiB of tensors; a device copy of them 16.96 us (3.96 TB/s); baseline 3.52 TB/s, 89 % of
    the copy; nearest candidate 7 at 96 %' (or why there is no ceiling)."""
    nbytes = int(found.get("bytes") or 0)
    if not found.get("copy_ms"):
        return f"memory: no copy ceiling ({found.get('why_not') or 'not measured'})"
    text = (f"memory: {nbytes / 2**20:.1f} MiB of tensors; a device copy of them {found['copy_ms'] * 1e3:.2f} us "
            f"({found['copy_gbps'] / 1e3:.2f} TB/s)")
    if found.get("baseline_of_copy"):
        text += (f"; baseline {found['baseline_gbps'] / 1e3:.2f} TB/s, "
                 f"{found['baseline_of_copy'] * 100:.0f} % of the copy")
    if best is not None:
        text += f"; nearest candidate {best[0]} at {best[1] * 100:.0f} %"
    return text
