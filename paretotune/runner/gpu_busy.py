"""How the search's measurements went, recorded in ``run.json`` (one entry per run or resume): how busy the GPU
worker was and how much time hung candidates cost, how far the paired baseline drifted against its own noise,
and how loaded the host was while it measured."""
from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Sequence
from typing import Any

from paretotune.records import HOW_TIMED, TrialRecord
from paretotune.store.run_dir import RunDir


def search_timing(records: Sequence[TrialRecord], wall_s: float) -> dict[str, Any]:
    """How busy the GPU worker was during the search: the seconds it spent on candidates (build, check and
    timing; not the wait for a spare after a fault, nor the wait on a candidate that hung, which is
    ``gpu_lost_s``) over the search's wall time after the baseline, and the GPU-side build seconds per measured
    candidate (near 0 when it finds the CPU pool's Triton cache entry)."""
    measured = [r for r in records if r.measure_s > 0]
    lost = sum(r.stages.get("gpu_lost_s", 0.0) for r in measured)
    busy = sum(r.measure_s - r.stages.get("gpu_start_s", 0.0) for r in measured) - lost
    builds = [r.stages["gpu_build_s"] for r in measured if "gpu_build_s" in r.stages]
    return {"candidates": len(records), "search_wall_s": round(wall_s, 3), "gpu_busy_s": round(busy, 3),
            "gpu_busy_fraction": round(busy / wall_s, 4) if wall_s > 0 and measured else None,
            "gpu_lost_s": round(lost, 3), "hung_candidates": sum("gpu_lost_s" in r.stages for r in measured),
            "gpu_build_s_per_candidate": round(sum(builds) / len(builds), 4) if builds else None}


DRIFT_MIN_TIMINGS = 5  # fewer paired-baseline timings of a shape say nothing about drift
NOISE_FLOOR_FACTOR = 4.0  # x the median successive change: above what noise alone spreads (~3.3 sigma p5-p95)


def baseline_drift(records: Sequence[TrialRecord]) -> dict[str, dict[str, Any]]:
    """Per shape: how far the paired baseline moved over the run against its own short-term noise.

    ``spread_pct``: the 5th to 95th percentile of the baseline timings paired with candidates, over their median.
    ``noise_floor_pct``: :data:`NOISE_FLOOR_FACTOR` times the median change between successive timings (noise
    moves every timing; drift moves the level, which successive changes do not see). ``exceeds``: the spread is
    above the floor, so ratios early and late in the run were taken at different clocks (each candidate's
    ratio is still to its own neighbour; the front says so)."""
    series: dict[str, list[float]] = {}
    for rec in sorted(records, key=lambda r: r.candidate_id):
        for shape, figures in rec.extra.items():
            if isinstance(figures, dict) and figures.get("baseline_ms"):
                series.setdefault(shape, []).append(float(figures["baseline_ms"]))
    out: dict[str, dict[str, Any]] = {}
    for shape, times in series.items():
        if len(times) < DRIFT_MIN_TIMINGS:
            continue
        middle = statistics.median(times)
        cuts = statistics.quantiles(times, n=20, method="inclusive")
        spread = 100.0 * (cuts[-1] - cuts[0]) / middle
        floor = 100.0 * NOISE_FLOOR_FACTOR * statistics.median(abs(b - a) for a, b in zip(times, times[1:])) / middle
        out[shape] = {"timings": len(times), "median_ms": round(middle, 6), "spread_pct": round(spread, 2),
                      "noise_floor_pct": round(floor, 2), "exceeds": spread > floor}
    return out


def shape_clocks(records: Sequence[TrialRecord]) -> dict[str, dict[str, Any]]:
    """Per shape: the clock that ranked its candidates and why (the first measured record's; one shape is
    timed one way for the whole run), and the kernel authors' own method where it was recorded beside."""
    clocks: dict[str, dict[str, Any]] = {}
    for rec in records:
        for shape, figures in rec.extra.items():
            if shape not in clocks and isinstance(figures, dict) and figures.get("timing"):
                clocks[shape] = {k: figures[k] for k in HOW_TIMED if k in figures}
    return clocks


class HostLoad:
    """The host's 1-minute load average sampled every ``every_s`` in a daemon thread while the search runs: the
    build workers beside the GPU worker are CPU load, and a figure measured under load says so in run.json."""

    def __init__(self, every_s: float = 2.0) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, args=(every_s,), name="paretotune-host-load",
                                        daemon=True)

    def _sample(self, every_s: float) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(every_s):
                return

    def start(self) -> HostLoad:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, Any]:
        """Mean and peak load average over the samples, beside the host's CPU count they are read against, and
        the CPUs this process may use (fewer where it is pinned to a share of the host: one GPU's of several)."""
        if not self.samples:
            return {}
        usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        return {"cpus": os.cpu_count(), "usable_cpus": usable, "load_mean": round(statistics.fmean(self.samples), 2),
                "load_max": round(max(self.samples), 2), "samples": len(self.samples)}


def record_timing(run: RunDir, *, schedule: str | None, records: Sequence[TrialRecord], wall_s: float,
                  phases_s: dict[str, float] | None = None, host_load: dict[str, Any] | None = None,
                  search_errors: Sequence[str] = ()) -> None:
    """Append this process's :func:`search_timing` to ``run.json`` (``timing``: one entry per run or resume),
    with ``phases_s``: the loop's seconds per phase (setup: adapter, pools; baseline; engine; search; twins;
    close), so a slow start shows where it went; the paired baseline's drift (:func:`baseline_drift`) and the
    host's load (:class:`HostLoad`). ``search_errors``: what the engine met inside itself and went on past, one
    line each (run.json's ``search_errors`` is this call's, so a resume that met none clears it), in the same
    write."""
    meta = run.meta()
    if search_errors or meta.get("search_errors"):
        meta["search_errors"] = list(search_errors)
    drift, clocks = baseline_drift(records), shape_clocks(records)
    meta.setdefault("timing", []).append({"schedule": schedule, **search_timing(records, wall_s),
                                          **({"phases_s": phases_s} if phases_s else {}),
                                          **({"clocks": clocks} if clocks else {}),
                                          **({"baseline_drift": drift} if drift else {}),
                                          **({"host_load": host_load} if host_load else {}),
                                          "ended": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    run.write_meta(meta)
