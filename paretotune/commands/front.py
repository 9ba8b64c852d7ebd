"""Print a stored run's ranked Pareto front (and the all-shapes pick when the campaign has several shapes).

One reading of every number: a time objective (runtime, compile time; unit ms or s, minimized) is shown as a
*speedup*, ``baseline / candidate`` (1.22x = 22% faster, > 1 is better), in this table, the all-shapes table,
``validate``, the report and the JSON; any other objective as its ratio to the baseline, ``value / baseline``
(0.54x registers, 1.5x occupancy), with the unit in the header. Raw values are kept beside both.

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
