"""Re-measure chosen candidates against the baseline in a fresh process, many interleaved rounds.

Each round times the baseline, a second copy of the baseline (the control: it must come out "not
significant") and every candidate, in a seeded random order, with ``do_bench``; each round contributes one
median per arm. Interleaving spreads clock and thermal drift over all arms instead of letting it pose as a
speedup.
"""
from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

CONTROL_ID = -1  # the baseline measured as if it were a candidate


def validate_in_process(campaign_path: str, campaign_text: str, ptxas_path: str, ptxas_version: str,
                        candidates: list[dict[str, Any]], rounds: int, warmup_ms: float, rep_ms: float,
                        seed: int) -> dict[str, Any]:
    """Return {shape: {"baseline": [...], candidate_id: [...] | "error"}} of per-round median times (ms)."""
    from paretotune.toolchain.ptxas import Ptxas, export_for_triton

    export_for_triton(Ptxas(path=Path(ptxas_path), version=ptxas_version))
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    import torch

    from paretotune.campaign.load import campaign_from_text, make_adapter
    from paretotune.execution.timing import bench, check_output

    campaign = campaign_from_text(campaign_text, Path(campaign_path))
    adapter = make_adapter(campaign)
    device = campaign.spec.evaluation.device
    rng = random.Random(seed)
    result: dict[str, Any] = {}
    for shape in campaign.shapes:
        arms: dict[Any, Any] = {"baseline": adapter.prepare(adapter.default_config(), shape, None, device, seed),
                                CONTROL_ID: adapter.prepare(adapter.default_config(), shape, None, device, seed + 1)}
        errors: dict[Any, str] = {}
        for cand in candidates:
            acf = Path(cand["acf_path"]) if cand["acf_path"] else None
            try:
                prep = adapter.prepare(cand["config"], shape, acf, device, seed + 2 + cand["candidate_id"])
                if prep.output is not None and prep.output.is_floating_point():
                    prep.output.fill_(float("nan"))
                got = prep.launch()
                torch.cuda.synchronize()
                problem = check_output(got, prep.reference(), prep.atol, prep.rtol)
            except Exception as exc:  # noqa: BLE001 - recorded as this candidate's failure
                problem = f"{type(exc).__name__}: {exc}"
            if problem:
                errors[cand["candidate_id"]] = problem
            else:
                arms[cand["candidate_id"]] = prep
        for prep in arms.values():  # warm every arm before the first timed round
            prep.launch()
        torch.cuda.synchronize()
        samples: dict[Any, list[float]] = {k: [] for k in arms}
        for _ in range(rounds):
            order = list(arms)
            rng.shuffle(order)
            for key in order:
                samples[key].append(bench(arms[key].launch, warmup_ms, rep_ms).median_ms)
        result[shape.label] = {"samples": {str(k): v for k, v in samples.items()}, "errors": {str(k): v for k, v in errors.items()}}
    return result
