"""Nsight Compute wrapper: many (candidate, shape) items measured in one ncu process, matched by NVTX range.

Modules: ``names`` (range names), ``catalog`` (known metrics, validation), ``command`` (the ncu argv),
``parse`` (raw CSV and ``.ncu-rep``), ``errors`` (what went wrong, from ncu's output), ``batch`` (items and
results), ``run`` (the batch runner with split-and-retry), ``child`` (the stock measurement program),
``protocol`` (the child's marker lines). Nothing here imports torch, triton or ncu_report at import time.
"""
from __future__ import annotations

from paretotune.ncu.batch import (
    BatchItem,
    BatchResult,
    ChildCommand,
    ChildRequest,
    ItemResult,
    RunRecord,
    combine_launches,
)
from paretotune.ncu.catalog import ALIASES, CATALOG, MetricSpec, lookup, query_metrics, resolve, validate_metrics
from paretotune.ncu.child import python_child, write_spec
from paretotune.ncu.command import NcuOptions, build_command, nvtx_include_patterns
from paretotune.ncu.errors import (
    Diagnosis,
    NcuMetricError,
    NcuNotFoundError,
    NcuPermissionError,
    NcuSetupError,
    diagnose,
)
from paretotune.ncu.locate import Ncu, find_ncu
from paretotune.ncu.names import parse_range_name, range_name
from paretotune.ncu.parse import LaunchRow, NvtxRange, parse_csv, read_report, to_dataframe
from paretotune.ncu.run import BatchPolicy, run_batch

__all__ = [
    "ALIASES", "CATALOG", "BatchItem", "BatchPolicy", "BatchResult", "ChildCommand", "ChildRequest", "Diagnosis",
    "ItemResult", "LaunchRow", "MetricSpec", "Ncu", "NcuMetricError", "NcuNotFoundError", "NcuOptions",
    "NcuPermissionError", "NcuSetupError", "NvtxRange", "RunRecord", "build_command", "combine_launches",
    "diagnose", "find_ncu", "lookup", "nvtx_include_patterns", "parse_csv", "parse_range_name", "python_child",
    "query_metrics", "range_name", "read_report", "resolve", "run_batch", "to_dataframe", "validate_metrics",
    "write_spec",
]
