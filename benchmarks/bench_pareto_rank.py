"""Time full Pareto ranking (every front + crowding distance) of 100,000 candidates x 4 objectives.

Goal (issue 3): under 1 s on a 2-core machine. What is timed is ``paretotune.pareto.rank_fronts`` on a
results DataFrame -- the public call, including the failed/NaN split, mixed directions and sorting -- not
only the sorting kernel, which is reported separately. Three objective distributions:

* ``tuning``: runtime (continuous, min), registers (integer, min), occupancy (eighths, max) and L1 hit rate
  (continuous, max), loosely correlated; many ties, like a real campaign; 1% failed rows.
* ``uniform``: independent uniform values, the usual many-fronts stress case for non-dominated sorting.
* ``anticorrelated``: points near a simplex, so front 0 is large and crowding does most of the work.

Run: ``python benchmarks/bench_pareto_rank.py`` (writes benchmarks/results/pareto_rank.json).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
from common import cpu_model, load_average

from paretotune.pareto import crowding_distances, pareto_ranks, rank_fronts
from paretotune.pareto.table import minimization_matrix

N, GOAL_S = 100_000, 1.0
DIRECTIONS = {"runtime": "min", "registers": "min", "occupancy": "max", "l1_hit": "max"}


def tuning(rng: np.random.Generator, n: int) -> np.ndarray:
    registers = rng.integers(32, 256, n).astype(float)
    occupancy = np.clip(np.round(8 * (1.1 - registers / 256 + rng.normal(0, 0.1, n))) / 8, 0.125, 1.0)
    runtime = 0.2 * rng.lognormal(0, 0.15, n) * (1.3 - 0.3 * occupancy)
    l1_hit = np.clip(rng.beta(5, 2, n) - 0.1 * (runtime - 0.2), 0, 1)
    return np.column_stack([runtime, registers, occupancy, l1_hit])


def uniform(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.random((n, 4))


def anticorrelated(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.dirichlet(np.ones(4), n) + rng.normal(0, 0.02, (n, 4))  # min-oriented: sum ~ 1
    return x * np.array([1, 1, -1, -1])  # flip the 'max' columns so the trade-off survives orientation


def results_table(values: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    n = len(values)
    frame = pd.DataFrame(values, columns=list(DIRECTIONS))
    frame.insert(0, "candidate_id", np.arange(n))
    frame.insert(1, "is_baseline", np.arange(n) == 0)
    failed = rng.random(n) < 0.01
    frame.insert(2, "status", np.where(failed, "failed", "ok"))
    frame.insert(3, "error", np.where(failed, "timeout", ""))
    frame.loc[failed, "runtime"] = np.nan
    return frame


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    fn()  # warm-up: imports, allocator
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def _summary(times: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(times), 4), "min": round(min(times), 4), "max": round(max(times), 4)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "pareto_rank.json")
    args = parser.parse_args()

    load_before = load_average()
    datasets = {}
    for name, make in {"tuning": tuning, "uniform": uniform, "anticorrelated": anticorrelated}.items():
        rng = np.random.default_rng(0)
        frame = results_table(make(rng, N), rng)
        ranking = rank_fronts(frame, DIRECTIONS)
        points = minimization_matrix(frame.loc[frame.index.isin(ranking.ranked.index)], DIRECTIONS)
        fronts = pareto_ranks(points)
        full = timed(lambda f=frame: rank_fronts(f, DIRECTIONS), args.repeats)
        sort = timed(lambda p=points: pareto_ranks(p), args.repeats)
        crowd = timed(lambda p=points, r=fronts: crowding_distances(p, r), args.repeats)
        datasets[name] = {
            "rows": N, "ranked": len(ranking.ranked), "excluded": len(ranking.excluded),
            "fronts": ranking.n_fronts, "front0_size": len(ranking.front(0)),
            "rank_fronts_s": _summary(full),
            "of_which_pareto_ranks_s": _summary(sort),  # moocore.pareto_rank on lexsorted rows
            "of_which_crowding_s": _summary(crowd),
            "meets_goal": statistics.median(full) < GOAL_S,
        }
        print(f"{name:15s} rank_fronts median {statistics.median(full):.3f} s (max {max(full):.3f}); "
              f"sorting {statistics.median(sort):.3f} s, crowding {statistics.median(crowd):.3f} s; "
              f"{ranking.n_fronts} fronts, front 0: {len(ranking.front(0))}")

    record = {
        "benchmark": "rank_fronts: all fronts + crowding, 100,000 candidates x 4 objectives (mixed directions)",
        "goal_s": GOAL_S,
        "command": f"cd {Path.cwd()} && {sys.executable} {' '.join(sys.argv)}",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"nproc": os.cpu_count(), "cpu": cpu_model(), "platform": platform.platform(),
                    "python": platform.python_version(),
                    "load_average_1_5_15_min": {"before": load_before, "after": load_average()}},
        "versions": {p: version(p) for p in ("numpy", "pandas", "moocore", "pymoo", "scipy")},
        "repeats": args.repeats,
        "datasets": datasets,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0 if all(d["meets_goal"] for d in datasets.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
