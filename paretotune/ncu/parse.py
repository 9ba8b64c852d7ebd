"""Read ncu results: the raw CSV page (or the details page), and ``.ncu-rep`` reports through ``ncu_report``.

The raw page is parsed by header name, never by position: the set and order of its ~300 columns depend on the
flags (the two NVTX columns exist only with ``--nvtx``; every metric is sorted alphabetically among the
automatically added device and launch attributes). Format facts, all visible in tests/fixtures/ncu/:

- ncu's ``==PROF==``/``==WARNING==`` lines (and, without ``--log-file``, the child's output) are interleaved
  with the CSV; only lines starting with ``"`` belong to it, and a table starts at its ``"ID",`` header.
- Row 2 of a raw table is the units row (empty ``ID``); values are quoted with thousands separators even in
  base units (``"1,980,000"``); ``n/a``, ``(!) n/a`` (unknown metric), tuples and words are not numbers.
- The push/pop cell is ``<tid>  "<domain>:<range>:…" "<domain>:<range>:…"``, outermost range first; the
  start/end cell is ``"<id>:<domain>:<range>:…"``. The default domain prints as ``<default domain>``.
"""
from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paretotune.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

PUSH_POP_COLUMN = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
START_END_COLUMN = "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
FIXED_COLUMNS = frozenset({"ID", "Process ID", "Process Name", "Host Name", PUSH_POP_COLUMN, START_END_COLUMN,
                           "Kernel Name", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC"})
_DETAILS_COLUMNS = ("Metric Name", "Metric Unit", "Metric Value")
_INSTANCES = re.compile(r"^(\S+) \(.*\)$")  # --print-metric-instances values: "16 (16)"
_QUOTED = re.compile(r'"([^"]*)"')
# Scaled units (--print-units auto, or -i without --print-units) → (base unit, factor); decimal prefixes, as
# the fixtures show: 67.113984 Mbyte == 67,113,984 byte; 52.928 us == 52,928 ns.
_PREFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_TIME = {"us": ("ns", 1e3), "usecond": ("ns", 1e3), "ms": ("ns", 1e6), "msecond": ("ns", 1e6)}

INSTALL_HINT = ("reading .ncu-rep files needs the ncu_report module: pip install ncu-report "
                "(at least the ncu version that wrote the report)")


@dataclass(frozen=True)
class NvtxRange:
    domain: str  # "<default domain>" for the default domain
    name: str


@dataclass(frozen=True)
class LaunchRow:
    """One profiled result (a kernel launch, or a range in range replay)."""

    result_id: int
    kernel: str
    push_pop: tuple[NvtxRange, ...] = ()  # outermost first
    start_end: tuple[NvtxRange, ...] = ()
    metrics: dict[str, float | None] = field(default_factory=dict)  # numeric value in base units, or None
    units: dict[str, str] = field(default_factory=dict)
    cells: dict[str, str] = field(default_factory=dict)  # every cell as printed

    def ranges(self) -> tuple[NvtxRange, ...]:
        return self.push_pop + self.start_end

    def raw(self, column: str) -> str:
        return self.cells.get(column, "")


def parse_value(cell: str) -> float | None:
    """A CSV cell as a number: thousands separators removed; ``n/a``, ``(!) n/a``, tuples and words → None."""
    text = cell.strip()
    match = _INSTANCES.match(text)
    if match:
        text = match.group(1)
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def is_error_cell(cell: str) -> bool:
    """``(!) n/a``: ncu could not collect the metric at all (unknown name, unsupported here)."""
    return cell.strip().startswith("(!)")


def normalize_unit(unit: str) -> tuple[str, float]:
    """``(base unit, factor)`` for a scaled unit: ``Mbyte`` → ``("byte", 1e6)``, ``us`` → ``("ns", 1e3)``."""
    if unit in _TIME:
        return _TIME[unit]
    if len(unit) > 1 and unit[0] in _PREFIX and (unit[1:].startswith("byte") or unit[1:].lower() == "hz"):
        return unit[1:].lower() if unit[1:].lower() == "hz" else unit[1:], _PREFIX[unit[0]]
    return unit, 1.0


def parse_nvtx_cell(cell: str, *, start_end: bool = False) -> tuple[NvtxRange, ...]:
    """Ranges from an NVTX cell; start/end items carry a leading id field."""
    ranges = []
    for item in _QUOTED.findall(cell):
        fields = item.split(":")
        if start_end:
            fields = fields[1:]
        if len(fields) >= 2 and fields[1]:
            ranges.append(NvtxRange(fields[0], fields[1]))
    return tuple(ranges)


def csv_rows(text: str) -> list[list[str]]:
    """The CSV records in mixed output: lines starting with ``"`` only, from the first ``"ID",`` header on."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID",')), None)
    return [] if start is None else list(csv.reader(lines[start:]))


def parse_csv(text: str, *, normalize_units: bool = True) -> list[LaunchRow]:
    """All results in ncu CSV output (raw page or details page, detected from the header)."""
    records = csv_rows(text)
    rows: list[LaunchRow] = []
    header: list[str] = []
    units: dict[str, str] = {}
    details: dict[str, list[dict[str, str]]] = {}
    for record in records:
        if record and record[0] == "ID":  # a (new) table header
            header, units = record, {}
            continue
        if len(record) != len(header):
            continue  # a line cut short (the process was killed mid-print)
        cells = dict(zip(header, record))
        if all(c in header for c in _DETAILS_COLUMNS):
            details.setdefault(cells["ID"], []).append(cells)
        elif cells["ID"] == "":
            units = {k: v for k, v in cells.items() if k not in FIXED_COLUMNS}
        else:
            rows.append(_make_row(cells, dict(cells), units, normalize_units))
    for group in details.values():  # details page: one record per metric, grouped by result ID
        first = {k: v for k, v in group[0].items() if k in FIXED_COLUMNS}
        values = {c["Metric Name"]: c["Metric Value"] for c in group}
        detail_units = {c["Metric Name"]: c["Metric Unit"] for c in group}
        rows.append(_make_row({**first, **values}, {**first, **values}, detail_units, normalize_units))
    return rows


def _make_row(cells: dict[str, str], printed: dict[str, str], units: dict[str, str],
              normalize_units: bool) -> LaunchRow:
    metrics: dict[str, float | None] = {}
    out_units: dict[str, str] = {}
    for name, cell in cells.items():
        if name in FIXED_COLUMNS:
            continue
        value = parse_value(cell)
        unit = units.get(name, "")
        if normalize_units:
            unit, factor = normalize_unit(unit)
            value = None if value is None else value * factor
        metrics[name], out_units[name] = value, unit
    return LaunchRow(
        result_id=int(parse_value(cells.get("ID", "")) or 0),
        kernel=cells.get("Kernel Name", ""),
        push_pop=parse_nvtx_cell(cells.get(PUSH_POP_COLUMN, "")),
        start_end=parse_nvtx_cell(cells.get(START_END_COLUMN, ""), start_end=True),
        metrics=metrics, units=out_units, cells=printed)


def error_cells(text: str) -> dict[str, int]:
    """Per metric, how many results printed ``(!) n/a`` — from CSV or from the human-readable page."""
    counts: dict[str, int] = {}
    records = csv_rows(text)
    header: list[str] = records[0] if records else []
    for record in records[1:]:
        if not record or record[0] in ("", "ID") or len(record) != len(header):
            continue
        cells = dict(zip(header, record))
        if "Metric Name" in cells:  # details page
            cells = {cells["Metric Name"]: cells.get("Metric Value", "")}
        for name, cell in cells.items():
            if is_error_cell(cell):
                counts[name] = counts.get(name, 0) + 1
    for line in text.splitlines():  # details page without --csv: "    foo__bar.sum      (!) n/a"
        match = re.match(r"^\s+([a-z0-9_]+__\S+)\s+.*\(!\) n/a\s*$", line)
        if match:
            counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    return counts


def to_dataframe(rows: Iterable[LaunchRow], metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per result: id, kernel, innermost push/pop domain and range, then the metric columns."""
    import pandas as pd

    records: list[dict[str, Any]] = []
    for row in rows:
        inner = row.push_pop[-1] if row.push_pop else (row.start_end[-1] if row.start_end else None)
        names = metrics if metrics is not None else list(row.metrics)
        records.append({"id": row.result_id, "kernel": row.kernel,
                        "nvtx_domain": inner.domain if inner else None, "nvtx_range": inner.name if inner else None,
                        **{m: row.metrics.get(m) for m in names}})
    return pd.DataFrame.from_records(records)


def load_ncu_report() -> Any:
    """Import ``ncu_report`` (pip ``ncu-report``) or raise a one-line UserError with the install hint."""
    try:
        import ncu_report  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        raise UserError(INSTALL_HINT) from None
    return ncu_report


def read_report(path: Path, metrics: Sequence[str] | None = None) -> list[LaunchRow]:
    """Every action of a ``.ncu-rep`` file as :class:`LaunchRow` (no GPU needed).

    ``metrics=None`` reads every metric of each action (564 for four sections); non-numeric values become None.
    """
    ncu_report = load_ncu_report()
    if not Path(path).is_file():
        raise FileNotFoundError(path)
    context = ncu_report.load_report(str(path))
    rows: list[LaunchRow] = []
    for rng in context:
        for action in rng:
            push_pop: list[NvtxRange] = []
            start_end: list[NvtxRange] = []
            state = action.nvtx_state()
            if state is not None:
                for domain_id in state.domains():
                    domain = state.domain_by_id(domain_id)
                    push_pop += [NvtxRange(domain.name(), r) for r in domain.push_pop_ranges()]
                    start_end += [NvtxRange(domain.name(), r) for r in domain.start_end_ranges()]
            values: dict[str, float | None] = {}
            units: dict[str, str] = {}
            cells: dict[str, str] = {}
            for name in (metrics if metrics is not None else action.metric_names()):
                metric = action.metric_by_name(name)
                value = None if metric is None else metric.value()
                values[name] = float(value) if isinstance(value, (int, float)) else None
                units[name] = "" if metric is None else metric.unit()
                cells[name] = "(!) n/a" if metric is None else str(value)  # as the CSV marks a missing metric
            rows.append(LaunchRow(result_id=len(rows), kernel=action.name(), push_pop=tuple(push_pop),
                                  start_end=tuple(start_end), metrics=values, units=units, cells=cells))
    del context  # the actions were SWIG proxies into it; nothing above outlives this function
    return rows
