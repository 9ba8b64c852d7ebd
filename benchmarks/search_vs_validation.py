"""Does the front a user reads hold when validated? Each validated candidate's in-search speedup (its paired
baseline's time over its own, per shape) beside validation's, and the run's candidate throughput.

    python benchmarks/search_vs_validation.py RUN_DIR [RUN_DIR ...] --out OUT.json

Reads, through ``paretotune.open_run``, ``results.jsonl`` (the records' ``ratio_to_baseline`` per shape),
``validation.json`` (its verdicts) and ``run.json`` (the search's timing entry: clocks, drift, host load, GPU busy,
hung time) of each run.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from common import run_meta, stored_records


def compare(run_dir: Path) -> dict[str, Any]:
    records = {r.candidate_id: r for r in stored_records(run_dir)}
    meta = run_meta(run_dir)
    timing = (meta.get("timing") or [{}])[-1]
    out: dict[str, Any] = {"run_dir": str(run_dir), "candidates": len(records) - 1,
                           "search_wall_s": timing.get("search_wall_s"),
                           "candidates_per_100s": round(100 * (len(records) - 1) / timing["search_wall_s"], 1)
                           if timing.get("search_wall_s") else None,
                           **{k: timing.get(k) for k in ("gpu_busy_fraction", "gpu_lost_s", "hung_candidates",
                                                         "clocks", "baseline_drift", "host_load")}}
    validation = run_dir / "validation.json"
    if not validation.exists():
        return out
    rows = []
    for verdict in json.loads(validation.read_text())["verdicts"]:
        cid = int(verdict["candidate_id"]) if str(verdict["candidate_id"]).lstrip("-").isdigit() else None
        rec = records.get(cid) if cid is not None and cid >= 0 else None
        shape = verdict.get("shape")
        figures = rec.extra.get(shape, {}) if rec is not None and shape else {}
        if not figures.get("ratio_to_baseline") or verdict.get("speedup") is None:
            continue
        search = 1.0 / figures["ratio_to_baseline"]
        rows.append({"candidate_id": cid, "shape": shape, "role": verdict.get("role"),
                     "search_speedup": round(search, 4), "validated_speedup": round(float(verdict["speedup"]), 4),
                     "search_vs_validated_pct": round(100 * (search / float(verdict["speedup"]) - 1), 2),
                     "significant": verdict.get("significant"), "search_timing": figures.get("timing")})
    out["members"] = rows
    out["max_abs_search_vs_validated_pct"] = max((abs(r["search_vs_validated_pct"]) for r in rows), default=None)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "runs": [compare(r) for r in args.runs]}
    args.out.write_text(json.dumps(result, indent=1, default=str))
    for run in result["runs"]:
        print(f"{run['run_dir']}: {run['candidates']} candidates ({run['candidates_per_100s']} per 100 s), "
              f"GPU busy {run['gpu_busy_fraction']}, max |search - validated| "
              f"{run.get('max_abs_search_vs_validated_pct')} %")
        for row in run.get("members", []):
            print(f"  {row['candidate_id']:>4} {row['shape']:>14} search {row['search_speedup']:.4f}x "
                  f"validated {row['validated_speedup']:.4f}x ({row['search_vs_validated_pct']:+.2f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
