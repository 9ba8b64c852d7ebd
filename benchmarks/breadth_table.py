"""The breadth table of issues 28 and 31: for every Helion program ``bench_capture.py --parts helion`` found, and
every kernel its capture saw, whether it became a campaign that ran, and if not why (one line), its baseline's
source and a short acf-only result.

Reads one or more ``bench_capture.py`` output folders (``helion_examples.csv``, ``helion_campaigns.csv``), in
order: a later call's row for the same (program, kernel) replaces an earlier one (a campaign re-run with
``--captures``). Writes a CSV and prints the counts::

    python benchmarks/breadth_table.py --out breadth.csv CALL_B_OUT CALL_D_OUT
    python benchmarks/breadth_table.py --base breadth.csv --out breadth2.csv CALL_E_OUT   # a later call on top

``--base``: an earlier table (its call folders need not be kept), whose rows the calls' rows replace.

The acf-only result is the search's own best worst-shape speedup over the baseline (A/B-paired on shared
buffers, but measured while other campaigns shared the GPU): a lead, not a validated figure.
"""
from __future__ import annotations

import argparse
import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

from common import last_error

FIELDS = ["program", "kernel", "status", "why", "outputs", "baseline_source", "baseline_ms", "acf_candidates",
          "acf_wrong", "acf_only_search_best"]


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.open())) if path.is_file() else []


def outputs(calls: list[Path], program: str, kernel: str) -> str:
    """What the kernel's most expensive captured signature produced: tensors returned (a tuple: several) and
    arguments written in place, from the capture's own record."""
    for call in reversed(calls):
        path = call / "work" / "helion" / program / "calls" / f"{kernel}.json"
        if path.is_file():
            signature = (json.loads(path.read_text()).get("signatures") or [{}])[0]
            returned = [r for r in signature.get("returned") or [] if r.get("argument") is None]
            args = signature.get("args") or []
            if isinstance(args, list):  # Helion's arguments by position: their names from the capture's record
                record = call / "work" / "helion" / program / "capture.json"
                params = next((k.get("params") or [] for k in json.loads(record.read_text())["kernels"]
                               if k["name"] == kernel), []) if record.is_file() else []
                args = {params[i] if i < len(params) else f"argument {i}": leaf for i, leaf in enumerate(args)}
            written = [name for name, leaf in args.items() if (leaf.get("tensor") or {}).get("written")]
            parts = ([f"returns {len(returned)} tensor{'s' if len(returned) > 1 else ''}"] if returned else []) + \
                ([f"writes {', '.join(written)} in place"] if written else [])
            return "; ".join(parts) or "returns nothing, writes nothing"
    return ""


def campaign_row(row: dict[str, str], logs: Path) -> dict[str, Any]:
    """One campaign's outcome: ran (its baseline built, checked and timed, its ACF candidates measured), or why not
    (from its log under ``logs`` where the call kept it)."""
    base = {"program": row["example"], "kernel": row["kernel"], "baseline_source": row.get("baseline_source", ""),
            "baseline_ms": row.get("baseline_ms", "")}
    evaluated = row.get("evaluated") or ""
    if row.get("ran") == "True":
        wrong = row.get("wrong_fraction") or "0"
        return {**base, "status": "ran", "acf_candidates": evaluated, "acf_wrong": wrong,
                "acf_only_search_best": row.get("search_best_speedup", "")}
    error = (row.get("error") or "").strip()
    if error.startswith("out of time"):
        return {**base, "status": "not started", "why": "the call's time ran out before it started"}
    if evaluated:  # its search finished, its process did not end inside the cap
        return {**base, "status": "searched, exit cut", "acf_candidates": evaluated,
                "acf_only_search_best": row.get("search_best_speedup", ""),
                "why": f"its process was interrupted at the cap (rc {row.get('rc')}) after its search"}
    if row.get("interrupted") == "True":
        return {**base, "status": "cut", "why": f"not done inside its cap ({row.get('wall_s')} s, other campaigns "
                                                "sharing the host)"}
    log = logs / f"helion_run_{row['example']}_{row['kernel']}.log"
    return {**base, "status": "failed", "why": (last_error(log) if log.is_file() else error)[:300]}


def table(calls: list[Path]) -> list[dict[str, Any]]:
    programs: dict[str, dict[str, Any]] = {}  # program -> its row when no kernel of it has a row
    kernels: dict[tuple[str, str], dict[str, Any]] = {}
    for call in calls:
        for row in _rows(call / "helion_examples.csv"):
            program = row["example"]
            if row.get("captured_in"):  # a --captures call's copy of an earlier call's row: that row stands
                continue
            if row.get("skipped"):
                programs[program] = {"program": program, "status": "not run", "why": row["skipped"]}
                continue
            skipped = json.loads(row.get("skipped_kernels") or "{}")
            for kernel, why in skipped.items():
                kernels[(program, kernel)] = {"program": program, "kernel": kernel, "status": "no campaign",
                                              "why": why}
            if not int(row.get("campaigns") or 0) and not skipped:
                log = call / "work" / "logs" / f"helion_{program}.log"
                why = last_error(log) if log.is_file() else row.get("error") or ""
                if row.get("interrupted") == "True" and not int(row.get("kernels") or 0):
                    why = f"its capture was cut at {row.get('wall_s')} s (the call's capture time) before a kernel " \
                          f"call was recorded ({why})"
                programs[program] = {"program": program, "status": "no campaign",
                                     "why": (why or f"program exit {row.get('rc')} before any kernel call")[:300]}
        for row in _rows(call / "helion_campaigns.csv"):
            kernels[(row["example"], row["kernel"])] = campaign_row(row, call / "work" / "logs")
    covered = {program for program, _ in kernels}
    for (program, kernel), row in kernels.items():
        row["outputs"] = outputs(calls, program, kernel)
    out = [r for p, r in programs.items() if p not in covered] + list(kernels.values())
    return sorted(out, key=lambda r: (r["program"], r.get("kernel") or ""))


def on_top(base: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``base`` (an earlier table's rows) with ``rows`` replacing each (program, kernel) they have; a program's
    row without a kernel goes where the program now has kernel rows."""
    key = lambda r: (r["program"], r.get("kernel") or "")  # noqa: E731
    merged = {key(r): r for r in base}
    with_kernels = {r["program"] for r in rows if r.get("kernel")}
    merged = {k: r for k, r in merged.items() if not (k[1] == "" and k[0] in with_kernels)}
    merged.update({key(r): r for r in rows})
    return sorted(merged.values(), key=key)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("calls", nargs="+", type=Path, help="bench_capture.py output folders, earliest first")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--base", type=Path, help="an earlier breadth table the calls' rows replace rows of")
    args = parser.parse_args()
    rows = table(args.calls)
    if args.base:
        rows = on_top(_rows(args.base), rows)
    with args.out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows({k: r.get(k, "") for k in FIELDS} for r in rows)
    counts = Counter(r["status"] for r in rows)
    ran = [r for r in rows if r["status"] == "ran"]
    print(f"{len({r['program'] for r in rows})} programs, {sum(1 for r in rows if r.get('kernel'))} kernels: "
          + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    print(f"ran with ACF candidates: {len(ran)} kernels of {len({r['program'] for r in ran})} programs; of them "
          f"{sum('tensors' in r['outputs'] for r in ran)} return several tensors, "
          f"{sum('in place' in r['outputs'] for r in ran)} write arguments in place")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
