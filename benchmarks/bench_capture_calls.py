"""The CPU cost a capture adds to every kernel call: the recorder's bookkeeping per call (signature key, lookup,
counting) for calls of a 20-parameter kernel with 4, 10 or 20 of its arguments set (three quarters of them CPU
tensors, the rest integers, the unset ones None), measured on the CPU with a no-op launch in place of the kernel.

This is the part of the capture's overhead that does not need a GPU: on a GPU, a timed call adds two CUDA events
(recorded by Triton's launch hooks) on top of it, and the sampled timing leaves most calls untimed. It says which
part of the per-call cost changed between two commits; the program-level overhead is ``bench_capture.py``'s
(GPU). Run it on each commit to compare (``PYTHONPATH`` at that commit's checkout)::

    python benchmarks/bench_capture_calls.py --out benchmarks/results/capture_calls_devbox.json --label new

``--out`` collects results: a run appends its entry (label, commit, figures) to the file's list.
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import cpu_model, load_average

ROOT = Path(__file__).resolve().parents[1]


def per_call_us(fn: Any, calls: int, repeats: int) -> float:
    """Median over ``repeats`` of the mean time of ``calls`` calls, in microseconds."""
    means = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        means.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(means)


def main() -> int:
    import torch
    import triton
    import triton.language as tl

    import paretotune
    from paretotune.capturing.metadata import leaf_key
    from paretotune.capturing.recorder import Recorder

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--label", required=True, help="what this run measures (e.g. the change's name)")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    @triton.jit
    def kernel(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, BLOCK: tl.constexpr):  # noqa: E741
        pass

    def noop(_self: Any, *_a: Any, **_k: Any) -> None:
        return None

    figures = {}
    for count in (4, 10, 20):
        tensors = [torch.empty(4096, 128) for _ in range(count - count // 4)]
        arguments = tuple(tensors) + tuple(range(count // 4))  # three quarters tensors, the rest integers
        arguments += (None,) * (20 - count)  # the kernel's remaining parameters
        kwargs = {"BLOCK": 128, "grid": (32,), "warmup": False}
        recorder = Recorder()
        recorder.triton_run(kernel, noop, arguments, kwargs, True)  # the first call: described once

        def recorded(r: Any = recorder, a: tuple[Any, ...] = arguments, k: dict[str, Any] = kwargs) -> None:
            r.triton_run(kernel, noop, a, k, True)

        def keyed(a: tuple[Any, ...] = arguments) -> None:
            tuple(leaf_key(x) for x in a)

        def bare(a: tuple[Any, ...] = arguments, k: dict[str, Any] = kwargs) -> None:
            noop(kernel, *a, **k)

        figures[f"{count}_of_20_set"] = {name: round(per_call_us(fn, args.calls, args.repeats), 2) for name, fn in
                                         (("recorder_call_us", recorded), ("signature_key_us", keyed),
                                          ("bare_call_us", bare))}
    commit = subprocess.run(["git", "-C", str(Path(paretotune.__file__).parent), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    entry = {"label": args.label, "commit": commit, "paretotune": str(Path(paretotune.__file__).parent),
             "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
             "command": " ".join([Path(sys.executable).name, *sys.argv]), "cpu": cpu_model(),
             "load_average": load_average(), "python": sys.version.split()[0], "torch": torch.__version__,
             "triton": triton.__version__, "calls": args.calls, "repeats": args.repeats, "per_call": figures}
    runs = json.loads(args.out.read_text()) if args.out.is_file() else []
    runs.append(entry)
    args.out.write_text(json.dumps(runs, indent=1) + "\n")
    print(json.dumps(entry["per_call"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
