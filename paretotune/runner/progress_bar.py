"""The progress line of a run: a rich progress bar advanced once per stored record, with the best result so
far (a plain counter when rich is absent or the run is quiet)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paretotune.records import TrialRecord


MAX_CELLS = 4  # columns shown on the progress line; the rest are counted


class BestSoFar:
    """The best speedup so far per time column (runtime@shape), or for a static campaign the best gain over the
    baseline per objective column, for the progress line (one reading: see pareto/convention). A column whose
    ratio is undefined (a baseline of 0, as spill bytes usually are) is left out, not the whole line."""

    def __init__(self, columns: list[Any], records: list[TrialRecord]) -> None:
        from paretotune.pareto.convention import is_time

        timed = [c for c in columns if is_time(c)]
        self.columns = timed or list(columns)
        self.speedups = bool(timed)
        self.baseline: dict[str, float] = {}
        self.best: dict[str, float] = {}
        for record in records:
            self.add(record)

    def add(self, record: TrialRecord) -> None:
        """Take one stored record into account (the first successful baseline is the reference)."""
        from paretotune.pareto.convention import versus_baseline

        if record.status != "ok":
            return
        if record.is_baseline:
            self.baseline = self.baseline or dict(record.values)
            return
        for c in self.columns:
            if c.column not in record.values or c.column not in self.baseline:
                continue
            shown = versus_baseline(float(record.values[c.column]), self.baseline[c.column], c)
            held = self.best.get(c.column)
            if shown == shown and (held is None or shown > held):  # a gain: larger is better
                self.best[c.column] = shown

    def text(self) -> str:
        if not self.best:
            return ""
        shown = [c.column for c in self.columns if c.column in self.best]
        cells = ", ".join(f"{col} {self.best[col]:.3f}x" for col in shown[:MAX_CELLS])
        more = f" (+{len(shown) - MAX_CELLS} more)" if len(shown) > MAX_CELLS else ""
        return f" best {'speedup' if self.speedups else 'gain'}: {cells}{more}"


class ProgressBar:
    """A rich progress bar advanced once per stored record (plain counter when rich is absent or --quiet)."""

    def __init__(self, total: int, quiet: bool, completed: int = 0, best: BestSoFar | None = None) -> None:
        self.total, self.quiet, self.completed = total, quiet, completed
        self.best = best
        self._bar: Any = None

    def __enter__(self) -> Callable[[TrialRecord], None]:
        if not self.quiet:
            try:
                from rich.progress import Progress

                self._bar = Progress(transient=False)
                self._bar.start()
                self._task = self._bar.add_task("evaluating", total=self.total, completed=self.completed)
            except ImportError:
                self._bar = None
        return self.advance

    def advance(self, record: TrialRecord) -> None:
        if self.best is not None:
            self.best.add(record)
        if self._bar is not None:
            best = self.best.text() if self.best is not None else ""
            self._bar.update(self._task, advance=1, description=f"evaluating (last: #{record.candidate_id} "
                             f"{record.status}){best}")

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
