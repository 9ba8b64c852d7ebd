"""Wall time of commands that should answer at once: ``paretotune --help``, a subcommand's ``--help`` and the
refusal of a bad campaign file, whole process (interpreter start-up included), one paretotune source tree
against another, interleaved run by run so that a change in the machine's load hits both alike.

    python benchmarks/bench_cli_startup.py --tree before=/tmp/old --tree after=. --runs 15 \\
        --out benchmarks/results/cli_startup_devbox.json

Each tree is put first on ``PYTHONPATH`` and run as ``python -m paretotune.cli ARGS``; the median, min and max
of each command's wall seconds are recorded with the machine, its load and the date.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import append_result, comparison_record, load_average, tree_arguments, trees_of

BAD_CAMPAIGN = "name: x\nkernel: {source: 'k.py:k'}\nbogus: 1\n"
COMMANDS = {"--help": ["--help"], "front --help": ["front", "--help"], "run --help": ["run", "--help"],
            "run bad.yaml": ["run", "{bad}"]}



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    tree_arguments(parser, runs=15)
    args = parser.parse_args()
    trees = trees_of(args.tree)
    work = Path(tempfile.mkdtemp())
    bad = work / "bad.yaml"
    bad.write_text(BAD_CAMPAIGN)
    times: dict[str, dict[str, list[float]]] = {c: {t: [] for t in trees} for c in COMMANDS}
    codes: dict[str, dict[str, int]] = {c: {} for c in COMMANDS}
    loads = [load_average()]
    for _ in range(args.runs + 1):  # the first round warms the file cache and is not counted
        for name, words in COMMANDS.items():
            for label, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": str(tree)}
                start = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "paretotune.cli",
                                       *[w.format(bad=bad) for w in words]], cwd=work, env=env,
                                      capture_output=True)
                times[name][label].append(time.perf_counter() - start)
                codes[name][label] = done.returncode
    loads.append(load_average())
    result = {
        **comparison_record("wall seconds of the whole process, python -m paretotune.cli ARGS, interleaved per run",
                            trees, loads),
        "runs": args.runs,
        "commands": {name: {label: {"exit_code": codes[name][label],
                                    "median_s": round(statistics.median(ts[1:]), 3),
                                    "min_s": round(min(ts[1:]), 3), "max_s": round(max(ts[1:]), 3)}
                            for label, ts in per.items()} for name, per in times.items()},
    }
    text = json.dumps(result, indent=1)
    print(text)
    append_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
