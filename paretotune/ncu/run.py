"""Run one batch of (candidate, shape) items under one ncu process; split and retry when the child dies.

Why batches: each ncu process, and the Python + torch child it profiles, costs seconds to start (several times
a candidate's own profiling), so one process per candidate would make metric-driven searches an order of
magnitude slower than runtime-only ones (docs/results.md has the figures).

Why splitting: a candidate that faults (illegal address, a hang under kernel replay) kills the child and the
whole batch with it. After a failed run the runner keeps every item that did get a complete result, records
items the child reported as failed (marker lines, :mod:`paretotune.ncu.protocol`), then re-runs the rest:
the item the child was working on when it died alone first (when markers say which), otherwise the two halves
(bisection). An item that fails alone is recorded as failed with the reason. ``BatchPolicy.max_runs`` bounds
the number of ncu processes per batch.

Setup errors (no ncu, no counter permission, unknown metric, profiler busy) raise a one-line UserError;
everything else comes back as data in :class:`~paretotune.ncu.batch.BatchResult`.
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from paretotune.ncu.batch import (
    BatchItem,
    BatchResult,
    ChildCommand,
    ChildRequest,
    ItemResult,
    RunRecord,
    combine_launches,
)
from paretotune.ncu.catalog import query_metrics, validate_metrics
from paretotune.ncu.command import NcuOptions, build_command, import_command
from paretotune.ncu.errors import Diagnosis, NcuMetricError, diagnose, missing_ranges_message, raise_if_fatal
from paretotune.ncu.locate import Ncu, find_ncu
from paretotune.ncu.names import DEFAULT_DOMAIN_LABEL
from paretotune.ncu.parse import LaunchRow, is_error_cell, parse_csv, read_report
from paretotune.ncu.protocol import parse_markers

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding paretotune/


@dataclass(frozen=True)
class BatchPolicy:
    """Limits of one batch. The timeout covers one ncu process: ``base + per_item * len(items)`` seconds."""

    timeout_base_s: float = 120.0
    timeout_per_item_s: float = 15.0
    max_runs: int = 24
    kill_grace_s: float = 5.0
    validate_metrics: bool = True

    def timeout_for(self, n_items: int) -> float:
        return self.timeout_base_s + self.timeout_per_item_s * n_items


@dataclass
class _Outcome:
    rows: list[LaunchRow]
    diagnosis: Diagnosis
    text: str
    record: RunRecord


@dataclass
class _BatchRun:
    """State of one :func:`run_batch` call while it recurses over sub-batches."""

    ncu: Ncu
    child_command: ChildCommand
    options: NcuOptions
    policy: BatchPolicy
    workdir: Path
    env: dict[str, str]
    results: dict[str, ItemResult] = field(default_factory=dict)
    runs: list[RunRecord] = field(default_factory=list)
    attempts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def measure(self, items: list[BatchItem]) -> None:
        if len(self.runs) >= self.policy.max_runs:
            last = self.runs[-1].message if self.runs else ""
            for item in items:
                self._fail(item, f"not measured: the batch used its {self.policy.max_runs} ncu runs "
                                 f"(last failure: {last})")
            return
        outcome = self._run_once(items)
        raise_if_fatal(outcome.diagnosis)
        groups = self._assign(outcome.rows, items)
        self._check_metrics_known([row for rows in groups.values() for row in rows])
        markers = parse_markers(outcome.text)
        child_failed = {m.range_name: m.message for m in markers if m.event == "failed"}
        for item in items:
            if item.range_name in child_failed:  # even with rows: a launch that raised may be incomplete
                self._fail(item, child_failed[item.range_name])
            elif item.range_name in groups:
                self.results[item.range_name] = self._item_result(item, groups[item.range_name])
        remaining = [item for item in items if item.range_name not in self.results]
        if not remaining:
            return
        diagnosis = outcome.diagnosis
        if not diagnosis.retryable:  # the child finished normally, yet these ranges produced no result
            self.warnings.append(missing_ranges_message([i.range_name for i in remaining], diagnosis))
            for item in remaining:
                self._fail(item, missing_ranges_message([item.range_name], diagnosis))
            return
        if len(items) == 1:
            self._fail(items[0], diagnosis.message)
            return
        # The item the child was working on when it died (its last start/measure marker), if still unresolved.
        started = [m.range_name for m in markers if m.event in ("start", "measure")]
        suspect = {item.range_name: item for item in remaining}.get(started[-1]) if started else None
        if suspect is not None and len(remaining) > 1:
            self.measure([suspect])
            self.measure([item for item in remaining if item is not suspect])
        elif len(remaining) < len(items):
            self.measure(remaining)
        else:
            half = len(remaining) // 2
            self.measure(remaining[:half])
            self.measure(remaining[half:])

    def _fail(self, item: BatchItem, error: str) -> None:
        self.results[item.range_name] = ItemResult(item, "failed", error=error,
                                                   runs=self.attempts.get(item.range_name, 0))

    def _item_result(self, item: BatchItem, rows: list[LaunchRow]) -> ItemResult:
        values = combine_launches(rows, self.options.metrics)
        missing = [m for m, v in values.items() if v is None]
        kernels = tuple(row.kernel for row in rows)
        runs = self.attempts.get(item.range_name, 0)
        if missing:
            cells = ", ".join(f"{m}={rows[0].raw(m) or 'missing'!r}" for m in missing)
            return ItemResult(item, "failed", kernels=kernels, runs=runs,
                              error=f"no numeric value in range {item.range_name}: {cells}")
        units = {m: rows[0].units.get(m, "") for m in self.options.metrics}
        return ItemResult(item, "ok", {m: float(v) for m, v in values.items() if v is not None}, units, kernels,
                          runs=runs)

    def _assign(self, rows: list[LaunchRow], items: list[BatchItem]) -> dict[str, list[LaunchRow]]:
        """Rows grouped by the item range they were launched in (innermost matching push/pop range)."""
        domain = self.options.nvtx_domain or DEFAULT_DOMAIN_LABEL
        wanted = {item.range_name for item in items}
        groups: dict[str, list[LaunchRow]] = {}
        for row in rows:
            match = next((r.name for r in reversed(row.push_pop) if r.domain == domain and r.name in wanted), None)
            if match is not None:
                groups.setdefault(match, []).append(row)
        return groups

    def _check_metrics_known(self, rows: list[LaunchRow]) -> None:
        """ncu prints ``(!) n/a`` (and exits 0) for a metric it cannot collect at all: a setup error."""
        if not rows:
            return
        bad = [m for m in self.options.metrics
               if all(m not in row.cells or is_error_cell(row.cells[m]) for row in rows)]
        if bad:
            raise NcuMetricError(f"ncu could not collect metric(s) {', '.join(bad)} for any kernel ('(!) n/a'); "
                                 f"check the name with `ncu --query-metrics`")

    def _run_once(self, items: list[BatchItem]) -> _Outcome:
        index = len(self.runs)
        run_dir = self.workdir / f"run-{index:03d}"
        run_dir.mkdir(parents=True, exist_ok=False)
        for item in items:
            self.attempts[item.range_name] = self.attempts.get(item.range_name, 0) + 1
        request = ChildRequest(tuple(items), run_dir, self.options.nvtx_domain)
        child_argv = list(self.child_command(request))
        log, report = run_dir / "ncu.log", run_dir / "report"
        argv = build_command(self.ncu.path, self.options, [i.range_name for i in items], child_argv,
                             log_file=log, report_path=report if self.options.output == "report" else None)
        timeout = self.policy.timeout_for(len(items))
        start = time.monotonic()
        with open(run_dir / "stdout.txt", "wb") as out, open(run_dir / "stderr.txt", "wb") as err:
            proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=self.env,
                                    start_new_session=True)
            timed_out = False
            try:
                returncode: int | None = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                returncode = _kill_group(proc, self.policy.kill_grace_s)
        wall = time.monotonic() - start
        log_text = _read(log)
        text = "\n".join((log_text, _read(run_dir / "stdout.txt"), _read(run_dir / "stderr.txt")))
        rows = self._read_rows(log_text or _read(run_dir / "stdout.txt"), report.with_suffix(".ncu-rep"))
        diagnosis = diagnose(text, returncode, timed_out=timed_out)
        record = RunRecord(index, tuple(argv), tuple(i.range_name for i in items), returncode, timed_out,
                           round(wall, 3), diagnosis.kind, diagnosis.message, str(run_dir), len(rows))
        self.runs.append(record)
        return _Outcome(rows, diagnosis, text, record)

    def _read_rows(self, csv_text: str, report: Path) -> list[LaunchRow]:
        if self.options.output == "csv":
            return parse_csv(csv_text)
        if not report.is_file():
            return []
        try:
            import ncu_report  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: F401
        except ImportError:  # no reader module: let ncu print the report as raw CSV instead
            proc = subprocess.run(import_command(self.ncu.path, report), check=False, capture_output=True, text=True,
                                  timeout=300)
            return parse_csv(proc.stdout)
        try:
            return read_report(report, self.options.metrics)
        except Exception:  # noqa: BLE001 - a report cut short by a crash reads as no results
            return []


def _kill_group(proc: subprocess.Popen[bytes], grace_s: float) -> int | None:
    """Stop ncu and its child (one process group, ours since start_new_session=True): TERM, then KILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            return proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            continue
    return proc.poll()


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: ours, plus ``extra``, with paretotune's source root appended to PYTHONPATH so
    ``python -m paretotune.ncu.child`` works from a checkout that is not installed."""
    env = {**os.environ, **(extra or {})}
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if _PACKAGE_ROOT not in parts:
        parts.append(_PACKAGE_ROOT)
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def run_batch(
    items: Sequence[BatchItem],
    child_command: ChildCommand,
    options: NcuOptions,
    *,
    ncu: Ncu | None = None,
    policy: BatchPolicy | None = None,
    workdir: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> BatchResult:
    """Profile every item in as few ncu processes as possible; one :class:`ItemResult` per item, in order.

    Raises a one-line UserError for setup problems (see :mod:`paretotune.ncu.errors`). Each ncu run's files
    (``run-NNN/ncu.log``, ``stdout.txt``, ``stderr.txt``, the child's spec) stay in a new ``batch-*``
    directory under ``workdir`` (default: a new temporary directory), for debugging a failed candidate.
    """
    items = list(items)
    if not items:
        return BatchResult((), ())
    names = [item.range_name for item in items]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"run_batch: duplicate (candidate, shape) items: {', '.join(dup)}")
    ncu = ncu or find_ncu()
    policy = policy or BatchPolicy()
    if policy.validate_metrics:
        validate_metrics(options.metrics, query_metrics(ncu.path))
    if workdir is None:
        workdir = Path(tempfile.mkdtemp(prefix="paretotune-ncu-"))
    else:
        Path(workdir).mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="batch-", dir=workdir))
    state = _BatchRun(ncu, child_command, options, policy, workdir, child_env(env))
    state.measure(items)
    return BatchResult(tuple(state.results[n] for n in names), tuple(state.runs), ncu.version, tuple(state.warnings))
