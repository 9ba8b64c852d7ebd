"""From a capture record to what a kernel engineer runs: the ranked summary and one campaign per kernel.

Layout of a capture folder::

    capture.json               everything recorded (the program's process writes it)
    summary.txt, summary.json  kernels ranked by time: signatures, calls, time, share, campaign or why none
    <kernel>.yaml              a campaign: ``paretotune run DIR/<kernel>.yaml``
    calls/<kernel>.json        what its ``kernel.captured`` names: the signatures its shapes stand for
    calls/<kernel>.heuristic.py  (Helion) the config each signature ran with, as an AOT heuristic
    values/k<N>/<id>.pt        (``--values``) the first call's tensors of each signature

A campaign's shapes are the kernel's most expensive signatures; its baseline is the config the program ran
with, its reference that build's output; objectives are ``runtime`` when the program ran on a GPU, else the
static ``registers`` and ``theoretical_occupancy``; the search is ``acf-only`` with a small budget.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from paretotune.capturing import SAMPLE_EVERY, TIME_FIRST
from paretotune.capturing.recorder import FORMAT

CALLS = "calls"
STATIC_OBJECTIVES = ["registers", "theoretical_occupancy"]
GPU_OBJECTIVES = ["runtime"]
HEURISTIC = '''"""Written by paretotune capture: the config {name} ran with for each captured signature, in the form of
Helion's AOT heuristics (``autotune_<kernel>(*args) -> config``), so that each shape's baseline is the program's."""
from paretotune.capturing.replay import recorded_config


def autotune_{name}(*args):
    return recorded_config(__file__, args)
'''


@dataclass(frozen=True)
class CampaignOptions:
    """How the written campaigns search: ``shapes`` signatures at most, ``generations`` of CompileIQ."""

    shapes: int = 3
    generations: int = 2
    wall_clock_s: float | None = None


@dataclass
class Row:
    """One kernel of the ranked summary."""

    rank: int
    kernel: str  # the campaign's file stem (the kernel's name, made unique)
    kind: str
    source: str
    signatures: int
    calls: int
    time_ms: float
    share: float  # of all captured kernels' time
    campaign: str | None  # file name in the capture folder
    shapes: int = 0  # signatures the campaign covers
    writes: str = ""  # the arguments its calls changed, and "returns" for a kernel that returned tensors
    skipped: str | None = None  # why there is no campaign


def write_campaigns(doc: dict[str, Any], out: Path, options: CampaignOptions) -> list[Row]:
    """Write ``calls/`` and one campaign per describable kernel; the ranked rows (no summary yet)."""
    kernels = sorted(doc["kernels"], key=lambda k: (-k["time_ms"], -k["calls"], k["index"]))
    total = sum(k["time_ms"] for k in kernels) or 1.0
    rows: list[Row] = []
    used: set[str] = set()
    for rank, kernel in enumerate(kernels, 1):
        stem = _unique(_safe(kernel["name"]), used)
        source = source_string(kernel["source"], out)
        where = f"{kernel['source'].get('file', '?')}:{kernel['source'].get('line', '?')}"
        row = Row(rank, stem, kernel["kind"], source or where,
                  len(kernel["signatures"]) + kernel["undescribed"]["signatures"], kernel["calls"],
                  kernel["time_ms"], kernel["time_ms"] / total, None)
        row.writes = writes(kernel)
        row.skipped = kernel["problem"] or (None if kernel["signatures"] else "no call of it was described")
        if row.skipped is None and source is None:
            row.skipped = "no source file and name a campaign can import"
        if row.skipped is None:
            row.campaign, row.shapes = _write_one(kernel, stem, source, out, options,
                                                  doc.get("program", {}).get("sys_path", []))
        rows.append(row)
    return rows


def writes(kernel: dict[str, Any]) -> str:
    """What the kernel's described calls wrote: the arguments whose contents changed (by name), then
    ``returns`` if a call returned tensors."""
    names: list[str] = []
    params = kernel.get("params", [])
    for sig in kernel["signatures"]:
        args = sig["args"]
        items = list(args.items()) if isinstance(args, dict) else [
            (params[i] if i < len(params) else str(i), a) for i, a in enumerate(args)]
        for name, arg in items:
            leaves = arg["leaves"] if "leaves" in arg else [arg]
            if any(leaf.get("tensor", {}).get("written") for leaf in leaves) and name not in names:
                names.append(name)
    if any(sig.get("returned") for sig in kernel["signatures"]):
        names.append("returns")
    return ",".join(names) or "-"


def source_string(source: dict[str, Any], out: Path) -> str | None:
    """``file.py:attr``: it resolves whatever ``sys.path`` the program had (the campaign's ``captured`` record
    names the module's package). The file relative to the capture folder, or absolute where the two share no
    folder but the root (a kernel of site-packages, of a temporary folder)."""
    file = source.get("file", "")
    if not source.get("attr") or not file or file.startswith("<"):
        return None
    folder = str(out.resolve())
    shared = os.path.commonpath([os.path.abspath(file), folder])
    where = file if os.path.dirname(shared) == shared else os.path.relpath(file, folder)
    return f"{where}:{source['attr']}"


def _write_one(kernel: dict[str, Any], stem: str, source: str, out: Path, options: CampaignOptions,
               program_path: list[str]) -> tuple[str, int]:
    chosen = kernel["signatures"][:options.shapes]
    calls_dir = out / CALLS
    calls_dir.mkdir(exist_ok=True)
    signatures = [{**s, "values": f"../{s['values']}"} if s.get("values") else s for s in chosen]
    calls = {"format": FORMAT, "kernel": {k: kernel[k] for k in ("name", "kind", "layers", "source")},
             "sys_path": program_path, "signatures": signatures}
    (calls_dir / f"{stem}.json").write_text(json.dumps(calls, indent=1), encoding="utf-8")
    section: dict[str, Any] = {"source": source, "captured": f"{CALLS}/{stem}.json"}
    if kernel["kind"] == "helion" and all(s.get("config") is not None for s in chosen):
        (calls_dir / f"{stem}.heuristic.py").write_text(HEURISTIC.format(name=kernel["name"]), encoding="utf-8")
        section["heuristic"] = f"{CALLS}/{stem}.heuristic.py"
    gpu = "cuda_events" in kernel["timing"]
    objectives = GPU_OBJECTIVES if gpu else STATIC_OBJECTIVES
    search: dict[str, Any] = {"engine": "compileiq", "strategy": "acf-only", "generations": options.generations,
                              "pool_size": max(8, 3 + 2 * len(objectives) * len(chosen))}
    if options.wall_clock_s is not None:
        search["wall_clock_s"] = options.wall_clock_s
    campaign = {"name": f"capture-{stem}", "kernel": section,
                "shapes": [{"name": shape_label(i, s), "captured": s["id"]} for i, s in enumerate(chosen, 1)],
                "objectives": objectives, "acf": {"search_space": "ptxas-13.3"}, "search": search}
    share = sum(s["time_ms"] for s in chosen) / (kernel["time_ms"] or 1.0)
    header = (f"# paretotune capture: {kernel['name']} ({source}), its {len(chosen)} most expensive of "
              f"{len(kernel['signatures'])} described signature(s), {share:.0%} of its time.\n"
              f"# Baseline: the config the program ran with; reference: that build's output. "
              f"Run: paretotune run {stem}.yaml\n")
    text = header + yaml.safe_dump(campaign, sort_keys=False, default_flow_style=None, width=120)
    (out / f"{stem}.yaml").write_text(text, encoding="utf-8")
    return f"{stem}.yaml", len(chosen)


def shape_label(rank: int, signature: dict[str, Any]) -> str:
    """``s<rank>-<largest tensor's dims>-<dtype>``: readable in tables, unique by the rank."""
    tensors = [leaf["tensor"] for leaf in _leaves(signature["args"]) if "tensor" in leaf]
    if not tensors:
        return f"s{rank}"
    big = max(tensors, key=lambda t: _numel(t["shape"]))
    return f"s{rank}-{'x'.join(str(d) for d in big['shape']) or 'scalar'}-{big['dtype']}"


def _leaves(args: Any) -> list[dict[str, Any]]:
    items = list(args.values()) if isinstance(args, dict) else list(args)
    out = []
    for item in items:
        out.extend(item["leaves"] if "leaves" in item else [item])
    return out


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def drop_campaign(out: Path, row: Row, reason: str) -> None:
    """Remove a campaign that does not resolve (and its calls), keeping the kernel in the summary with why."""
    for path in (out / f"{row.kernel}.yaml", out / CALLS / f"{row.kernel}.json",
                 out / CALLS / f"{row.kernel}.heuristic.py"):
        path.unlink(missing_ok=True)
    row.campaign, row.shapes, row.skipped = None, 0, reason


def summary_text(doc: dict[str, Any], rows: list[Row], out: Path) -> str:
    """The ranked table, the skipped kernels with their reasons, and the command to run next."""
    timing = doc.get("timing")
    unit = "GPU ms" if timing == "cuda_events" else "ms"
    program = " ".join(doc.get("program", {}).get("argv", []))
    what = {"cuda_events": "GPU time from CUDA events around each launch",
            "wall": "wall time around each call (no GPU: on the CPU, e.g. the Triton interpreter)",
            "mixed": "GPU time for calls on CUDA tensors, wall time for the others"}.get(timing, "no calls timed")
    lines = [f"captured {len(rows)} kernel(s), {sum(r.calls for r in rows)} call(s) of `{program}` "
             f"(exit code {doc.get('program', {}).get('exit_code')}); {what}"]
    on_gpu = [k for k in doc.get("kernels", []) if "cuda_events" in k["timing"]]
    # records written before sampled keys (no "sampled_calls") counted their timed calls
    sampled = sum(k.get("sampled_calls", k.get("timed_calls", k["calls"])) for k in on_gpu)
    calls = sum(k["calls"] for k in on_gpu)
    if sampled < calls:
        lines.append(f"sampled {sampled} of {calls} calls (each kernel's first {TIME_FIRST}, then about 1 in "
                     f"{SAMPLE_EVERY} at random): their signatures and GPU times, scaled to all calls; `--timing "
                     "all` samples every call")
    if doc.get("timing_problem"):
        lines.append(f"note: {doc['timing_problem']}")
    header = ["rank", "kernel", "kind", "signatures", "calls", f"total {unit}", "share", "writes", "campaign"]
    table = [[str(r.rank), r.kernel, r.kind, str(r.signatures), str(r.calls), f"{r.time_ms:.3f}",
              f"{100 * r.share:.1f}%", r.writes, r.campaign or "-"] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(header, *table, strict=True)]
    for line in [header, *table]:
        lines.append("  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)).rstrip())
    skipped = [r for r in rows if r.skipped]
    if skipped:
        lines.append("skipped (listed, no campaign):")
        lines += [f"  {r.kernel} ({r.source}): {r.skipped}" for r in skipped]
    runnable = [r for r in rows if r.campaign]
    if runnable:
        lines.append(f"next: paretotune run {out / runnable[0].campaign}")
    return "\n".join(lines) + "\n"


def write_summary(doc: dict[str, Any], rows: list[Row], out: Path) -> str:
    text = summary_text(doc, rows, out)
    (out / "summary.txt").write_text(text, encoding="utf-8")
    (out / "summary.json").write_text(json.dumps({"program": doc.get("program"), "timing": doc.get("timing"),
                                                  "kernels": [asdict(r) for r in rows]}, indent=1),
                                      encoding="utf-8")
    return text


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).strip(".") or "kernel"


def _unique(stem: str, used: set[str]) -> str:
    candidate, n = stem, 1
    while candidate in used:
        n += 1
        candidate = f"{stem}_{n}"
    used.add(candidate)
    return candidate
