"""The Nsight Compute metrics paretotune knows by name, and validation of the ones it does not.

Every name below was verified with ncu on a Hopper GPU (docs/results.md says which ncu; see
shared/reference/ncu.md, section 2); units are the base units ncu prints with ``--print-units base``.
``passes`` is the replay pass count measured for the metric alone (passes of several metrics do not add up).

Any other metric name is accepted; when an ncu binary is available it is checked against
``ncu --query-metrics`` (base names, cached on disk per ncu version) so a typo fails before a batch runs,
because ncu itself only prints ``(!) n/a`` for an unknown metric and exits 0.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from paretotune.ncu.errors import NcuMetricError
from paretotune.records import Direction

Combine = Literal["sum", "max", "weighted_mean"]


@dataclass(frozen=True)
class MetricSpec:
    """One known metric. ``combine`` says how launches in one range add up (sum, max, duration-weighted mean)."""

    name: str
    alias: str
    unit: str
    direction: Direction
    passes: int | None
    combine: Combine
    description: str


_SPECS = (
    MetricSpec("gpu__time_duration.sum", "duration", "ns", "min", 1, "sum",
               "kernel duration under ncu (cold caches with --cache-control all)"),
    MetricSpec("sm__warps_active.avg.pct_of_peak_sustained_active", "achieved_occupancy", "%", "max", 1,
               "weighted_mean", "achieved occupancy: active warps per active cycle, % of the SM maximum"),
    MetricSpec("sm__warps_active.avg.per_cycle_active", "achieved_warps_per_sm", "warp", "max", 1,
               "weighted_mean", "achieved active warps per SM per active cycle"),
    MetricSpec("sm__maximum_warps_per_active_cycle_pct", "theoretical_occupancy", "%", "max", 1,
               "weighted_mean", "theoretical occupancy from the launch configuration and resources"),
    MetricSpec("l1tex__throughput.avg.pct_of_peak_sustained_active", "l1tex_throughput", "%", "max", 6,
               "weighted_mean", "L1/TEX cache throughput, % of peak while active (SOL section row)"),
    MetricSpec("sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm_throughput", "%", "max", 9,
               "weighted_mean", "compute (SM) throughput, % of peak (SOL 'Compute (SM) Throughput')"),
    MetricSpec("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "memory_throughput", "%",
               "max", 6, "weighted_mean", "memory throughput, % of peak (SOL 'Memory Throughput')"),
    MetricSpec("lts__throughput.avg.pct_of_peak_sustained_elapsed", "l2_throughput", "%", "max", None,
               "weighted_mean", "L2 cache throughput, % of peak"),
    MetricSpec("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "dram_throughput", "%", "max", None,
               "weighted_mean", "DRAM throughput, % of peak"),
    MetricSpec("dram__bytes.sum", "dram_bytes", "byte", "min", 1, "sum", "bytes read from and written to DRAM"),
    MetricSpec("dram__bytes_read.sum", "dram_bytes_read", "byte", "min", 1, "sum", "bytes read from DRAM"),
    MetricSpec("dram__bytes_write.sum", "dram_bytes_write", "byte", "min", 1, "sum", "bytes written to DRAM"),
    MetricSpec("launch__registers_per_thread", "registers_per_thread", "register/thread", "min", 1, "max",
               "registers per thread of the launched kernel"),
)

CATALOG: dict[str, MetricSpec] = {spec.name: spec for spec in _SPECS}
ALIASES: dict[str, str] = {spec.alias: spec.name for spec in _SPECS}

# Prefixes ncu accepts in --metrics that are not metric names, and metric families that --query-metrics may
# not list (launch/device attributes are added to every result automatically).
_PASSTHROUGH = ("regex:", "group:", "breakdown:", "pmsampling:")
_UNLISTED_FAMILIES = ("launch__", "device__", "profiler__", "derived__", "nvlink__", "numa__", "c2clink__")
_METRIC_NAME = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)*__[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*$")
_QUERY_LINE = re.compile(r"^([a-z0-9_]+__[A-Za-z0-9_.]+)(?:\s|$)")


def lookup(name: str) -> MetricSpec | None:
    """The catalog entry for a full metric name or an alias (``achieved_occupancy``), if known."""
    return CATALOG.get(name) or CATALOG.get(ALIASES.get(name, ""))


def resolve(name: str) -> str:
    """Full ncu metric name for a name or catalog alias."""
    return ALIASES.get(name, name)


def parse_query_metrics(text: str) -> frozenset[str]:
    """Metric names (first column) from ``ncu --query-metrics`` output, any ``--query-metrics-mode``."""
    return frozenset(m.group(1) for line in text.splitlines() if (m := _QUERY_LINE.match(line.strip())))


def _cache_file(ncu: Path, cache_dir: Path) -> Path:
    stat = ncu.stat()
    key = hashlib.sha256(f"{ncu.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    return cache_dir / f"ncu-query-metrics-{key}.txt"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "paretotune"


def query_metrics(ncu: Path, *, cache_dir: Path | None = None, timeout_s: float = 120.0) -> frozenset[str] | None:
    """Base metric names this ncu knows for the local GPU, or ``None`` when ncu cannot say (no GPU, no permission).

    The list is cached per ncu binary (path, size, mtime), because the query takes seconds and never changes.
    """
    cache = _cache_file(ncu, cache_dir or default_cache_dir())
    if cache.is_file():
        return frozenset(cache.read_text().split())
    try:
        proc = subprocess.run([str(ncu), "--query-metrics"], check=False, capture_output=True, text=True,
                              timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = parse_query_metrics(proc.stdout)
    if proc.returncode != 0 or len(names) < 50 or "ERR_NVGPUCTRPERM" in proc.stdout + proc.stderr:
        return None  # a partial list would reject valid names; the run itself reports what went wrong
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text("\n".join(sorted(names)) + "\n")
    except OSError:
        pass
    return names


def validate_metrics(metrics: list[str] | tuple[str, ...], available: frozenset[str] | None = None) -> None:
    """Raise NcuMetricError (one line) for a malformed name, or one ncu does not list in ``available``.

    Catalog names, ``regex:``/``group:``-style selectors and auto-collected attribute families are always
    accepted; ``available`` holds base names (``dram__bytes``) or full names as ``--query-metrics`` prints them.
    """
    bad: list[str] = []
    for name in metrics:
        if name in CATALOG or name.startswith(_PASSTHROUGH):
            continue
        if not _METRIC_NAME.match(name):
            raise NcuMetricError(f"ncu metric {name!r} is not a metric name (expected e.g. "
                                 f"'sm__warps_active.avg.pct_of_peak_sustained_active'; aliases: "
                                 f"{', '.join(sorted(ALIASES))})")
        if available is None or name.startswith(_UNLISTED_FAMILIES):
            continue
        if name not in available and name.split(".")[0] not in available:
            bad.append(name)
    if bad:
        raise NcuMetricError(f"ncu does not know metric(s) {', '.join(bad)} on this GPU "
                             f"(checked with `ncu --query-metrics`); fix the name or pick one from that list")
