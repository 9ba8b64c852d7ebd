"""The report's summary block: campaign, kernel, shapes, budget, target and toolchain, from run.json and the
stored campaign.yaml (read leniently: a report must still render if the campaign schema moved on)."""
from __future__ import annotations

from typing import Any

import pandas as pd

from paretotune.errors import UserError
from paretotune.records import baseline_phrase, work_text
from paretotune.report.data import Summary
from paretotune.store import ObjectiveColumn


def summary_of(run_dir: str, meta: dict[str, Any], columns: list[ObjectiveColumn], campaign_text: str,
               results: pd.DataFrame, excluded: pd.DataFrame, n_front: int, final_hv: float | None) -> Summary:
    copy = _from_copy(campaign_text, run_dir)
    if copy is not None:
        name, kernel, shapes, budget = copy
    else:
        name, kernel, shapes, budget = "unknown", "unknown (campaign.yaml missing or unreadable)", \
            list(meta.get("shapes", [])), "unknown"
    target = str(meta.get("target", "unknown"))
    for key in ("gpu", "gpu_name", "device"):
        if meta.get(key):
            target += f" on {meta[key]}"
    objectives = list(dict.fromkeys((c.objective, c.direction) for c in columns))
    n_failed = int((results["status"] != "ok").sum()) if len(results) else 0
    seed = meta.get("seed")
    return Summary(run_dir=run_dir, campaign=str(meta.get("campaign", name)),
                   kernel=kernel, shapes=shapes, objectives=objectives, budget=budget, target=target,
                   versions={str(k): str(v) for k, v in sorted(meta.get("versions", {}).items())},
                   seed=None if seed is None else int(seed), created=str(meta.get("created", "")),
                   n_evaluated=len(results), n_failed=n_failed, n_excluded=len(excluded), n_front=n_front,
                   hypervolume=final_hv,
                   baseline=baseline_phrase(meta.get("kernel", {}).get("baseline_sources", {}),
                                            list(meta.get("shapes", []))),
                   measurement=measurement_lines(meta))


def measurement_lines(meta: dict[str, Any]) -> list[str]:
    """How the run's runtimes were measured, from run.json's last ``timing`` entry: each shape's clock and why,
    the paired baseline's drift against its noise floor, time lost to hung candidates, and the host's load."""
    timing = (meta.get("timing") or [{}])[-1]
    lines = []
    for shape, clock in (timing.get("clocks") or {}).items():
        authors = f"; its authors time it with {clock['authors_timing']} (recorded beside)" \
            if clock.get("authors_timing") else ""
        lines.append(f"{shape}: ranked by {clock.get('timing')} ({clock.get('timing_source', '')}){authors}")
        work = work_text(clock.get("gpu_work") or [])
        if work:
            lines.append(f"{shape}: {work}")
    for shape, drift in (timing.get("baseline_drift") or {}).items():
        verdict = "above its noise floor: the clock drifted" if drift["exceeds"] else "within its noise floor"
        lines.append(f"{shape}: paired baseline spread {drift['spread_pct']:.1f} % over {drift['timings']} timings, "
                     f"{verdict} ({drift['noise_floor_pct']:.1f} %)")
    if timing.get("hung_candidates"):
        lines.append(f"{timing['hung_candidates']} candidate(s) hung on the GPU: {timing['gpu_lost_s']:.1f} s lost "
                     "(not counted as GPU busy)")
    load = timing.get("host_load")
    if load:
        pinned = load.get("usable_cpus")
        lines.append(f"host load while measuring: mean {load['load_mean']:.1f}, peak {load['load_max']:.1f} on "
                     f"{load['cpus']} CPUs" + (f" (this run pinned to {pinned})" if pinned and pinned < load["cpus"]
                                               else ""))
    return lines


def _from_copy(text: str, where: str) -> tuple[str, str, list[str], str] | None:
    """(name, kernel, shapes, budget) as the summary words them, from the campaign copy; None where it does not
    parse: a report must still render if the schema moved on."""
    if not text:
        return None
    from paretotune.campaign.load import parse_text

    try:
        spec = parse_text(text, f"{where}/campaign.yaml")
    except UserError:
        return None
    search = spec.search
    budget = (f"{search.generations} generations x {search.pool_size} candidates = {search.budget} "
              f"evaluations plus the baseline ({search.engine} engine, {search.strategy} search)")
    if search.wall_clock_s:
        budget += f", stopping after {search.wall_clock_s:g} s"
    return spec.name, spec.kernel.source, [_shape_text(s.label(), s.params()) for s in spec.shapes], budget


def _shape_text(label: str, params: dict[str, Any]) -> str:
    inner = ", ".join(f"{k}={v}" for k, v in params.items())
    return f"{label} ({inner})" if inner else label
