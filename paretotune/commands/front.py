"""Print a stored run's ranked Pareto front (and the all-shapes pick when the campaign has several shapes).

One reading of every number (:mod:`paretotune.pareto.convention`): each value beside its gain over the
baseline, > 1 better (``baseline / value`` where lower is better, a runtime's speedup; ``value / baseline``
where higher is better), in this table, the all-shapes table, ``validate``, the report, export and the JSON,
with the unit in the header.

Front 0 is ordered by the knee pick, so row 1 is the balanced choice; the header says so. ``--json`` prints the
same data as one JSON document; non-finite numbers become null. The model and its renderings live in
:mod:`paretotune.front`; this module is the command's arguments only.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory written by 'paretotune run'")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of tables")


def main(args: argparse.Namespace) -> int:
    from paretotune.front import build_front, render_json, render_text

    report = build_front(Path(args.run_dir))
    print(render_json(report) if args.json else render_text(report))
    return 0
