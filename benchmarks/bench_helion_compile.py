"""Seconds per ahead-of-time compile of the bundled Helion softmax, one process, fresh Triton cache.

Why: on the H200 host each such compile took ~2 s in the CPU pool (h200_vs_helion_run3.json, stages), which
bounds a GPU campaign's rate; run this there and here to compare. Per config: ``compile_ptx`` (Triton to PTX
and cubin, no ACF) and ``precompile`` with a CompileIQ-sampled ACF (the GPU campaign's CPU stage).

    CIQ_SEARCH_SPACES_DIR=../shared/compileiq python benchmarks/bench_helion_compile.py --out FILE.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from machine import cpu_model, load_average  # benchmarks/ is sys.path[0] when a script runs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--configs", type=int, default=8)
    args = parser.parse_args()
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-helion-compile-")  # every compile is a miss

    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    ptxas = find_ptxas()
    export_for_triton(ptxas)
    from compileiq.ciq import Search
    from compileiq.search_spaces.compilers import PtxasSearchSpace
    from compileiq.types import SearchConfiguration, WorkerTypes

    from paretotune.kernels.bundled.helion_softmax import helion_softmax
    from paretotune.kernels.helion import HelionAdapter
    from paretotune.records import Shape
    from paretotune.toolchain.acf import AcfStore
    from paretotune.toolchain.arch import TARGETS

    tuner = Search(objective_function=lambda _c: None, search_space=PtxasSearchSpace(version="13.3"),
                   search_config=SearchConfiguration(pool_size=6, generations=1, problem_type="min",
                                                     num_objectives=1), worker_type=WorkerTypes.MANUAL)
    store = AcfStore(Path(tempfile.mkdtemp(prefix="bench-helion-compile-acf-")))
    acfs = [store.path(store.put_hex(h, ptxas_version=ptxas.version, target="sm_90", source="compileiq").sha256)
            for h in tuner.sample(args.configs)]
    adapter = HelionAdapter("helion_softmax", helion_softmax)
    shape = Shape(label="s", params={"M": args.m, "N": args.n, "dtype": "float16"})
    rng = random.Random(0)  # the same configs on every machine
    configs = [{k: rng.choice(v) for k, v in adapter.space().items()} for _ in acfs]
    rows = []
    for i, (config, acf) in enumerate(zip(configs, acfs)):
        t0 = time.perf_counter()
        adapter.compile_ptx(config, shape, TARGETS["sm_90"])
        t1 = time.perf_counter()
        adapter.precompile(config, shape, acf, TARGETS["sm_90"])
        rows.append({"config": config, "compile_ptx_s": round(t1 - t0, 3),
                     "precompile_s": round(time.perf_counter() - t1, 3), "first_in_process": i == 0})
        print(rows[-1], flush=True)
    later = rows[1:] or rows
    record = {
        "benchmark": __doc__.splitlines()[0],
        "command": f"{Path(sys.executable).name} {' '.join(sys.argv)}",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"nproc": os.cpu_count(), "cpu": cpu_model(), "platform": platform.platform(),
                    "python": platform.python_version(), "load_average_1_5_15_min": load_average()},
        "versions": {**{p: version(p) for p in ("triton", "torch", "helion", "compileiq")}, "ptxas": ptxas.version},
        "shape": [args.m, args.n],
        "median_s_after_the_first": {k: statistics.median(r[k] for r in later)
                                     for k in ("compile_ptx_s", "precompile_s")},
        "runs": rows,
    }
    args.out.write_text(json.dumps(record, indent=1, default=str) + "\n")
    print(json.dumps(record["median_s_after_the_first"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
