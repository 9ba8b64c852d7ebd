"""How busy the GPU worker was during a search, recorded in ``run.json`` (one entry per run or resume)."""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from paretotune.records import TrialRecord
from paretotune.store.run_dir import RunDir


def search_timing(records: Sequence[TrialRecord], wall_s: float) -> dict[str, Any]:
    """How busy the GPU worker was during the search: the seconds it spent on candidates (build, check and
    timing; not the wait for a spare after a fault) over the search's wall time after the baseline, and the
    GPU-side build seconds per measured candidate (near 0 when it finds the CPU pool's Triton cache entry)."""
    measured = [r for r in records if r.measure_s > 0]
    busy = sum(r.measure_s - r.stages.get("gpu_start_s", 0.0) for r in measured)
    builds = [r.stages["gpu_build_s"] for r in measured if "gpu_build_s" in r.stages]
    return {"candidates": len(records), "search_wall_s": round(wall_s, 3), "gpu_busy_s": round(busy, 3),
            "gpu_busy_fraction": round(busy / wall_s, 4) if wall_s > 0 and measured else None,
            "gpu_build_s_per_candidate": round(sum(builds) / len(builds), 4) if builds else None}


def record_timing(run: RunDir, *, schedule: str | None, records: Sequence[TrialRecord], wall_s: float,
                  phases_s: dict[str, float] | None = None) -> None:
    """Append this process's :func:`search_timing` to ``run.json`` (``timing``: one entry per run or resume),
    with ``phases_s``: the loop's seconds per phase (setup: adapter, pools; baseline; engine; search; twins;
    close), so a slow start shows where it went."""
    meta = run.meta()
    meta.setdefault("timing", []).append({"schedule": schedule, **search_timing(records, wall_s),
                                          **({"phases_s": phases_s} if phases_s else {}),
                                          "ended": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    run.write_meta(meta)
