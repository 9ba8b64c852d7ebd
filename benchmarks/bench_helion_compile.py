"""Seconds per ahead-of-time compile of the bundled Helion softmax, fresh Triton cache, alone or N at once.

Why: on the H200 host each such compile took ~2 s in the CPU pool (h200_vs_helion_run3.json, stages), against
0.45 s on the 2-core development machine; this separates the compiler's own cost (``--parallel 1``) from
contention between pool workers (``--parallel 12``: twelve processes compiling at once, as the pool does).
Per config: ``compile_ptx`` (Triton to PTX and cubin, no ACF) and ``precompile`` with a CompileIQ-sampled
ACF (the GPU campaign's CPU stage).

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
from concurrent.futures import ProcessPoolExecutor
from importlib.metadata import version
from multiprocessing import get_context
from pathlib import Path

from common import cpu_model, cpu_topology, load_average



def sample_acfs(n: int, folder: Path) -> list[str]:
    """``n`` ACFs from CompileIQ's ptxas 13.3 space, stored by content hash; their paths."""
    from compileiq.ciq import Search
    from compileiq.search_spaces.compilers import PtxasSearchSpace
    from compileiq.types import SearchConfiguration, WorkerTypes

    from paretotune.toolchain.acf import AcfStore
    from paretotune.toolchain.ptxas import find_ptxas

    tuner = Search(objective_function=lambda _c: None, search_space=PtxasSearchSpace(version="13.3"),
                   search_config=SearchConfiguration(pool_size=6, generations=1, problem_type="min",
                                                     num_objectives=1), worker_type=WorkerTypes.MANUAL)
    store = AcfStore(folder)
    ver = find_ptxas().version
    return [str(store.path(store.put_hex(h, ptxas_version=ver, target="sm_90", source="compileiq").sha256))
            for h in tuner.sample(n)]


def compile_series(seed: int, acfs: list[str], m: int, n: int) -> list[dict]:
    """One process's compiles: a config per ACF (chosen by ``seed``), each without and with its ACF."""
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-helion-compile-")  # every compile is a miss
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    export_for_triton(find_ptxas())
    from paretotune.kernels.bundled.helion_softmax import helion_softmax
    from paretotune.kernels.helion import HelionAdapter
    from paretotune.records import Shape
    from paretotune.toolchain.arch import TARGETS

    adapter = HelionAdapter("helion_softmax", helion_softmax)
    shape = Shape(label="s", params={"M": m, "N": n, "dtype": "float16"})
    rng = random.Random(seed)  # the same configs on every machine
    rows = []
    for i, acf in enumerate(acfs):
        config = {k: rng.choice(v) for k, v in adapter.space().items()}
        t0 = time.perf_counter()
        adapter.compile_ptx(config, shape, TARGETS["sm_90"])
        t1 = time.perf_counter()
        adapter.precompile(config, shape, Path(acf), TARGETS["sm_90"])
        rows.append({"process": seed, "config": config, "compile_ptx_s": round(t1 - t0, 3),
                     "precompile_s": round(time.perf_counter() - t1, 3), "first_in_process": i == 0})
        print(rows[-1], flush=True)
    return rows


def medians(rows: list[dict]) -> dict[str, float]:
    later = [r for r in rows if not r["first_in_process"]] or rows
    return {k: statistics.median(r[k] for r in later) for k in ("compile_ptx_s", "precompile_s")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--configs", type=int, default=8, help="configs (and ACFs) per process")
    parser.add_argument("--parallel", default="1", help="comma-separated process counts, e.g. 1,12")
    args = parser.parse_args()
    from paretotune.toolchain.ptxas import find_ptxas

    acfs = sample_acfs(args.configs, Path(tempfile.mkdtemp(prefix="bench-helion-compile-acf-")))
    results = {}
    for n_proc in (int(x) for x in args.parallel.split(",")):
        start = time.perf_counter()
        if n_proc == 1:
            rows = compile_series(0, acfs, args.m, args.n)
        else:
            with ProcessPoolExecutor(n_proc, mp_context=get_context("spawn")) as pool:
                rows = [r for part in pool.map(compile_series, range(n_proc), [acfs] * n_proc,
                                               [args.m] * n_proc, [args.n] * n_proc) for r in part]
        wall = time.perf_counter() - start
        results[str(n_proc)] = {"median_s_after_the_first": medians(rows), "wall_s": round(wall, 2),
                                "compiles": 2 * len(rows), "runs": rows}
        print(n_proc, json.dumps(results[str(n_proc)]["median_s_after_the_first"]), flush=True)
    record = {
        "benchmark": __doc__.splitlines()[0],
        "command": f"{Path(sys.executable).name} {' '.join(sys.argv)}",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"nproc": os.cpu_count(), "cpu": cpu_model(), "topology": cpu_topology(),
                    "platform": platform.platform(), "python": platform.python_version(),
                    "load_average_1_5_15_min": load_average()},
        "versions": {**{p: version(p) for p in ("triton", "torch", "helion", "compileiq")},
                     "ptxas": find_ptxas().version},
        "shape": [args.m, args.n],
        "by_parallel_processes": results,
    }
    args.out.write_text(json.dumps(record, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
