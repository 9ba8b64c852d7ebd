"""Build the ncu command line for one batch: one ncu process, one child, one NVTX push/pop range per item.

Flag choices (shared/reference/ncu.md, sections 1 and 6):

- ``--config-file off``: a ``config.ncu-cfg`` in the working directory or home would silently change flags.
- ``--target-processes all`` (already the default in 2025.3.1): the child may be started through a wrapper.
- ``--nvtx --nvtx-include <domain>@<range>/``, one per item (repeating the flag means OR). Push/pop ranges
  need the trailing ``/``; without it only start/end ranges match and ncu profiles nothing. The default
  domain is written without ``<domain>@`` (``"cand_1/"`` matched ``torch.cuda.nvtx.range_push("cand_1")``).
- ``--clock-control none``: the default ``base`` locks the SM clock at its base frequency, below the boost clock
  the search measures at, and a killed ncu (our timeout) would leave it locked.
- ``--cache-control all``: flush caches before each replay pass, so every candidate starts cold.
- ``--csv --page raw --print-units base`` (CSV mode), or ``-o <report>`` (report mode, read with
  ``ncu_report``); ``--log-file`` keeps ncu's own output (and the CSV) apart from the child's stdout/stderr.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from paretotune.ncu.catalog import resolve
from paretotune.ncu.names import check_safe

OutputMode = Literal["csv", "report"]
NvtxFilter = Literal["exact", "prefix"]


@dataclass(frozen=True)
class NcuOptions:
    """What to collect and how; everything that changes the ncu command line except paths and ranges.

    ``nvtx_domain=None`` uses the default NVTX domain, the combination verified under ncu
    (``torch.cuda.nvtx.range_push`` + ``--nvtx-include "name/"``); a string puts the ranges in that domain.
    ``nvtx_filter="prefix"`` passes one ``regex:`` include for the whole batch instead of one per range.
    ``launch_count`` adds ``-c N`` as a guard against a child that launches far more than expected.
    """

    metrics: tuple[str, ...]
    output: OutputMode = "csv"
    nvtx_domain: str | None = None
    nvtx_filter: NvtxFilter = "exact"
    clock_control: Literal["none", "base"] = "none"
    cache_control: Literal["all", "none"] = "all"
    replay_mode: Literal["kernel", "application", "range", "app-range"] = "kernel"
    launch_count: int | None = None
    extra_args: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not self.metrics:
            raise ValueError("NcuOptions.metrics: at least one metric is needed")
        object.__setattr__(self, "metrics", tuple(dict.fromkeys(resolve(m) for m in self.metrics)))
        if self.nvtx_domain is not None:
            check_safe(self.nvtx_domain, "NcuOptions.nvtx_domain")
        if self.launch_count is not None and self.launch_count < 1:
            raise ValueError(f"NcuOptions.launch_count must be >= 1 (got {self.launch_count})")


def nvtx_include_patterns(range_names: Sequence[str], domain: str | None, mode: NvtxFilter = "exact") -> list[str]:
    """The ``--nvtx-include`` values selecting exactly these push/pop ranges."""
    where = f"{domain}@" if domain is not None else ""
    if mode == "prefix":
        return [f"regex:{where}pt_.*/"]
    return [f"{where}{check_safe(name, 'NVTX range name')}/" for name in dict.fromkeys(range_names)]


def build_command(
    ncu: str | Path,
    options: NcuOptions,
    range_names: Sequence[str],
    child_argv: Sequence[str],
    *,
    log_file: Path | None = None,
    report_path: Path | None = None,
) -> list[str]:
    """The full argv: ncu, its flags, then the child command.

    ``report_path`` (required in report mode) is the ``-o`` stem; ncu appends ``.ncu-rep``.
    """
    if not child_argv:
        raise ValueError("build_command: the child command is empty")
    if not range_names:
        raise ValueError("build_command: no NVTX ranges to profile")
    argv = [str(ncu), "--config-file", "off", "--target-processes", "all", "--nvtx"]
    for pattern in nvtx_include_patterns(range_names, options.nvtx_domain, options.nvtx_filter):
        argv += ["--nvtx-include", pattern]
    argv += ["--metrics", ",".join(options.metrics),
             "--clock-control", options.clock_control,
             "--cache-control", options.cache_control,
             "--replay-mode", options.replay_mode]
    if options.launch_count is not None:
        argv += ["--launch-count", str(options.launch_count)]
    if options.output == "csv":
        argv += ["--csv", "--page", "raw", "--print-units", "base"]
    else:
        if report_path is None:
            raise ValueError("build_command: report mode needs report_path")
        argv += ["-f", "-o", str(report_path)]
    if log_file is not None:
        argv += ["--log-file", str(log_file)]
    argv += list(options.extra_args)
    return argv + list(child_argv)


def import_command(ncu: str | Path, report: Path) -> list[str]:
    """Print a saved report as the raw CSV page in base units (the report reader without ``ncu_report``)."""
    return [str(ncu), "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]
