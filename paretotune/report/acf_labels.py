"""What the report calls each ACF candidate besides its hash: where the ACF came from, and what it changed in
the build against the same config built without it (its no-ACF twin).

The controls a CompileIQ sample sets cannot be listed: CompileIQ's search space and every ACF it samples are
encrypted (its closed library formats the samples and never hands plaintext controls to Python), and ptxas
reads them as they are. What the run does know is each build's ptxas statistics, so an ACF is named by its
effect: "registers 31 -> 30" on the shapes where its build differs from its twin's, or that it changed none.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from paretotune.pareto.attribution import config_key, has_acf, twin_ids

# ptxas statistics of a build as ``extra`` stores them per shape, with how the report names them
BUILD_STATS = {"registers": "registers", "spill_stores": "spill stores", "spill_loads": "spill loads",
               "stack": "stack", "static_shared": "static shared"}
SOURCES = {"compileiq": "CompileIQ sample", "campaign acf list": "from the campaign's ACF list"}
UNREADABLE = ("CompileIQ's ACFs are encrypted, so the controls one sets cannot be listed; each is named by "
              "where it came from and what it changed in the build against the same config without it "
              "(ptxas's statistics: registers, spills, stack, shared memory).")


def acf_labels(results: pd.DataFrame, acf_dir: Path) -> dict[int, str]:
    """candidate id -> its ACF's label, for every record with an ACF (see the module docstring)."""
    if results.empty or "acf" not in results.columns:
        return {}
    twins = twin_ids(results)
    by_id = results.set_index("candidate_id")
    out: dict[int, str] = {}
    for _, row in results.iterrows():
        if not has_acf(row):
            continue
        twin = twins.get(config_key(row["config"])) if isinstance(row.get("config"), str) else None
        effect = ("not built without it" if twin is None
                  else changes(_stats(row.get("extra")), _stats(by_id.loc[twin].get("extra"))))
        out[int(row["candidate_id"])] = f"{origin(acf_dir, row['acf'])}; {effect}"
    return out


def origin(acf_dir: Path, sha: str) -> str:
    """'CompileIQ sample, ptxas 13.3' from the ACF's version record, or what the record says it came from."""
    try:
        record = json.loads((acf_dir / f"{sha}.json").read_text())
    except (OSError, ValueError):
        return "no version record"
    source = str(record.get("source", ""))
    return f"{SOURCES.get(source, source)}, ptxas {record.get('ptxas_version', '?')}"


def changes(candidate: dict[str, dict[str, Any]], twin: dict[str, dict[str, Any]]) -> str:
    """'registers 31 -> 30' (prefixed by the shape where there are several), or 'same build as without it'."""
    parts = []
    for shape, stats in candidate.items():
        other = twin.get(shape, {})
        moved = [f"{name} {other[key]:g} -> {stats[key]:g}" for key, name in BUILD_STATS.items()
                 if isinstance(stats.get(key), int | float) and isinstance(other.get(key), int | float)
                 and stats[key] != other[key]]
        if moved:
            parts.append((f"{shape}: " if len(candidate) > 1 else "") + ", ".join(moved))
    if not candidate:
        return "no build statistics recorded"
    same = "same registers, spills, stack and shared memory as without it"
    return ("vs no ACF: " + "; ".join(parts)) if parts else same


def _stats(extra: Any) -> dict[str, dict[str, Any]]:
    """Per shape, the build's ptxas statistics from a record's ``extra`` (JSON text or a dict)."""
    if isinstance(extra, str):
        try:
            extra = json.loads(extra)
        except json.JSONDecodeError:
            return {}
    if not isinstance(extra, dict):
        return {}
    return {str(k): v for k, v in extra.items() if isinstance(v, dict) and "registers" in v}
