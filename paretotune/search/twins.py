"""No-ACF twins: for every ACF candidate on front 0, the same config without the ACF, measured too.

Without the twin, a speedup over the baseline mixes two effects: the config (e.g. ``num_warps=16``) and the
ACF. With it, the gain splits into config-only (twin vs baseline) and ACF-only (candidate vs twin). Twins are
ordinary candidates; their records carry ``extra["twin_of"]``. A config that already has a record without an
ACF (the baseline, an earlier twin, a no-ACF search point) gets no new twin, so running this again (a resumed
run) adds nothing twice. Adding points never adds members to front 0, so one pass at the end of a search
covers every front candidate.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

import pandas as pd

from paretotune.pareto import rank_fronts
from paretotune.pareto.attribution import any_twin_ids, config_key, has_acf
from paretotune.records import Candidate, Direction


def missing_twins(results: pd.DataFrame, directions: Mapping[str, Direction]) -> list[tuple[int, dict]]:
    """(front candidate id, config) for each config on front 0 with an ACF and no record without one."""
    if results.empty:
        return []
    front = rank_fronts(results, directions).front(0)
    have = set(any_twin_ids(results))
    out: list[tuple[int, dict]] = []
    for _, row in front.sort_values("candidate_id", kind="stable").iterrows():
        key = config_key(row["config"])
        if has_acf(row) and key not in have:
            have.add(key)
            out.append((int(row["candidate_id"]), json.loads(row["config"])))
    return out


def twin_candidates(results: pd.DataFrame, directions: Mapping[str, Direction], *, next_id: int,
                    generation: int) -> list[Candidate]:
    """The twins still to measure, numbered from ``next_id``."""
    return [Candidate(candidate_id=next_id + i, generation=generation, config=config, acf=None, twin_of=cid)
            for i, (cid, config) in enumerate(missing_twins(results, directions))]
