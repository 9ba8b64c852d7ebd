"""Where each Helion autotuner arm's time went, read from the files it left (``helion_autotune.csv`` and ``.log``
in a ``helion-full/`` folder): when it benchmarked its first config and got its first answer, how many compiles and
benchmarks it timed out, which configs it skipped and why. The time-to-quality notes quote these; this makes them
data. Times are seconds from Helion's search start (its log's clock); the arm's process had started
``start_offset_s`` earlier (from the arm's ``ttq.json``, where there is one), so a time plus the offset is the
time on the table's plot.

    python benchmarks/helion_phases.py benchmarks/results/ttq42/parts --out benchmarks/results/ttq42/helion_phases.json
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from common import helion_csv_rows, startup_s

LOG_COUNTS = {  # what a log line says -> the count it adds to (Helion 1.5.0's wording)
    "compile_timeouts": re.compile(r"Timeout after [\d.]+s compiling"),
    "benchmark_timeouts": re.compile(r"benchmark timeout after [\d.]+s"),
    "runtime_errors_skipped": re.compile(r"Skipping config that triggered an unrecoverable runtime error"),
    "accuracy_mismatches_skipped": re.compile(r"Skipping config with accuracy mismatch"),
}
BUDGET = re.compile(r"Autotune budget ([\d.]+)s exceeded")


def arm_phases(folder: Path) -> dict[str, Any]:
    """One arm's phases from its ``helion-full/`` folder."""
    rows = helion_csv_rows(folder / "helion_autotune.csv")
    started = [r for r in rows if r["status"] == "started"]
    answered = [float(r["timestamp_s"]) for r in rows if r["status"] == "ok"]
    compiles = [float(r["compile_time_s"]) for r in started if r.get("compile_time_s")]
    log_file = folder / "helion_autotune.log"
    log = log_file.read_text(errors="replace") if log_file.exists() else ""
    budget = BUDGET.search(log)
    first_start = float(started[0]["timestamp_s"]) if started else None
    return {
        "benchmarked": len(started), "ok": len(answered),
        "failed": sum(r["status"] not in ("started", "ok") for r in rows),
        "first_benchmark_s": first_start, "first_result_s": min(answered, default=None),
        "first_answer_after_s": round(min(answered) - first_start, 2) if answered and first_start is not None
        else None,
        "compile_s_median": round(statistics.median(compiles), 2) if compiles else None,
        **{name: len(pattern.findall(log)) for name, pattern in LOG_COUNTS.items()},
        "budget_s": float(budget.group(1)) if budget else None,
        "start_offset_s": start_offset(folder),
    }


def start_offset(folder: Path) -> float | None:
    """Seconds from the arm's process start to Helion's search start, from the arm's ``ttq.json`` two folders up
    (``<arm>/<kernel>/helion-full``), where it has one."""
    record = folder.parent.parent / "ttq.json"
    if not record.exists():
        return None
    for entry in json.loads(record.read_text()).get("kernels", {}).values():
        for arm in entry.get("arms", []):
            if arm.get("tool", "").startswith("helion") and arm.get("start_epoch") and arm.get("process_epoch"):
                return round(startup_s(arm), 1)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="searched for helion-full/ folders, e.g. benchmarks/results/ttq42/parts")
    ap.add_argument("--out", type=Path, help="write the phases here as JSON (else print them)")
    args = ap.parse_args()
    if not args.folder.is_dir():
        print(f"helion_phases: {args.folder}: not a folder", file=sys.stderr)
        return 2
    phases = {d.relative_to(args.folder).as_posix(): arm_phases(d)
              for d in sorted(args.folder.rglob("helion-full")) if d.is_dir()}
    if not phases:
        print(f"helion_phases: {args.folder}: no helion-full/ folder below it", file=sys.stderr)
        return 2
    text = json.dumps(phases, indent=1) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
