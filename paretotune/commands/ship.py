"""Ship a validated run as the file the kernel's runtime loads: Helion's AOT heuristic with the winning buckets changed.

For a Helion AOT kernel: ``DIR/_helion_aot_<file>_cuda_sm90.py`` (the kernel's current heuristic verbatim, then an
override of ``autotune_<kernel>`` for each bucket whose winner cleared its noise floor on every campaign shape of
the bucket and passed its re-check) plus ``DIR/acf/<sha256>.acf``; drop both beside the kernel or point
``HELION_HEURISTIC_DIR`` at DIR. For a Triton kernel: ``DIR/<kernel>_launch.py``, a launch-options table keyed like
the kernel's autotuner key, and ``DIR/acfs.json``, the winners' PTX hashes keyed to their ACFs, for ``paretotune
exec --acfs DIR -- PROGRAM`` (the program's own source unchanged). ``DIR/ship.json`` holds the same decisions as data.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="a new (or empty) folder without spaces in its path")
    parser.add_argument("--json", action="store_true", help="print ship.json instead of the per-bucket lines")


def main(args: argparse.Namespace) -> int:
    from paretotune.ship.make import ship_run

    shipped = ship_run(args.run_dir, args.out)
    if args.json:
        print(json.dumps(shipped.summary, indent=2, default=str))
        return 0
    for choice in shipped.choices:
        shapes = ", ".join(choice.shapes)
        if choice.winner is None:
            print(f"bucket {choice.bucket!r} ({shapes}): unchanged: {choice.reason}")
        else:
            print(f"bucket {choice.bucket!r} ({shapes}): candidate {choice.winner}")
    print(f"\n{shipped.changed} of {len(shipped.choices)} buckets changed; wrote {shipped.module}"
          + (f" and {len(shipped.acfs)} ACF(s) in {shipped.out / 'acf'}" if shipped.acfs else ""))
    if shipped.summary.get("exec_entries"):
        print(f"{shipped.summary['exec_entries']} kernel build(s) in {shipped.out / 'acfs.json'}: "
              f"paretotune exec --acfs {shipped.out} -- PROGRAM applies them without a source change")
    return 0
