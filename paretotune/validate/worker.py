"""Re-measure chosen candidates against the baseline in a fresh process, many interleaved rounds.

Each round times the baseline, a second copy of the baseline (the control: it must come out "not
significant") and every candidate, in a seeded random order; each round contributes one median per arm.
Interleaving spreads clock and thermal drift over all arms instead of letting it pose as a speedup. Every arm of
a shape runs on the same timing buffers (:mod:`paretotune.measure.arms`); each candidate is checked first on
fresh inputs of its own.
"""
from __future__ import annotations

import random
import statistics
from pathlib import Path
from typing import Any

from paretotune.measure.arms import arms_notes, check_candidate, open_shape, sync
from paretotune.measure.ceiling import ceiling_record, copy_arm
from paretotune.measure.timing import HOST, Timer, TimingSetting, gpu_timer
from paretotune.kernels.base import KernelAdapter, Prepared
from paretotune.records import Shape

CONTROL_ID = -1  # the baseline measured as if it were a candidate
COPY = "copy"  # the copy-ceiling arm's place in a round's order (its samples are kept apart from the arms')


def validate_in_process(campaign_path: str, campaign_text: str, ptxas_path: str, ptxas_version: str,
                        candidates: list[dict[str, Any]], rounds: int, warmup_ms: float, rep_ms: float,
                        seed: int, *, own_buffers: bool = False) -> dict[str, Any]:
    """Return {shape: {"samples": {"baseline": [...], "-1": [...], id: [...]}, "errors": {id: why},
    "timing": method, "buffers": "shared" | "own", "host_ms": {arm: ms}, "ceiling": {"bytes", "copy_ms", ...}}}
    of per-round median times (ms), each arm's host cost per call (measured after the rounds, apart from the
    ranking clock), and the shape's copy ceiling (a device copy of the kernel's bytes, timed in the same rounds).

    ``own_buffers`` times each arm on tensors of its own (the method before shared buffers); only the noise-floor
    benchmark uses it, to show the difference.
    """
    from paretotune.toolchain.ptxas import Ptxas, export_for_triton

    export_for_triton(Ptxas(path=Path(ptxas_path), version=ptxas_version))
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter

    campaign = campaign_from_text(campaign_text, Path(campaign_path))
    adapter = make_adapter(campaign)
    evaluation = campaign.spec.evaluation
    rng = random.Random(seed)
    timer = gpu_timer(warmup_ms, rep_ms)
    return {shape.label: validate_shape(adapter, shape, candidates, rounds, seed, evaluation.device,
                                        evaluation.timing, timer, rng, own_buffers=own_buffers)
            for shape in campaign.shapes}


def validate_shape(adapter: KernelAdapter, shape: Shape, candidates: list[dict[str, Any]], rounds: int, seed: int,
                   device: str, setting: TimingSetting, timer: Timer, rng: random.Random, *,
                   own_buffers: bool = False) -> dict[str, Any]:
    """One shape: check every candidate on its own fresh inputs, then time all arms in ``rounds`` shuffled rounds.
    A candidate with ``shapes`` (labels) is measured on those shapes only (``validate --per-bucket``)."""
    errors: dict[Any, str] = {}
    passed = []
    candidates = [c for c in candidates if c.get("shapes") is None or shape.label in c["shapes"]]
    for cand in candidates:
        acf = Path(cand["acf_path"]) if cand["acf_path"] else None
        try:
            problem = check_candidate(adapter, cand["config"], shape, acf, device, seed + 2 + cand["candidate_id"])
        except Exception as exc:  # noqa: BLE001 - recorded as this candidate's failure
            problem = f"{type(exc).__name__}: {exc}"
        if problem:
            errors[cand["candidate_id"]] = problem
        else:
            passed.append((cand, acf))
    shared = open_shape(adapter, shape, device, seed, setting, timer)
    arms: dict[Any, Prepared] = {"baseline": shared.baseline}

    def bind(key: int, config: dict[str, Any], acf: Path | None) -> Prepared:
        if not own_buffers:
            return shared.bind(config, acf)
        prepared = adapter.prepare(config, shape, acf, adapter.make_inputs(shape, device, seed + 1 + key))
        prepared.launch()
        sync(device)
        return prepared

    arms[CONTROL_ID] = bind(0, adapter.default_config(shape), None)
    for cand, acf in passed:
        try:
            arms[cand["candidate_id"]] = bind(cand["candidate_id"] + 1, cand["config"], acf)
        except Exception as exc:  # noqa: BLE001 - recorded as this candidate's failure
            errors[cand["candidate_id"]] = f"{type(exc).__name__}: {exc}"
    samples: dict[Any, list[float]] = {k: [] for k in arms}
    copy, why_no_copy = _copy_arm(shared.nbytes, device)
    copied: list[float] = []
    for n in range(rounds):
        order: list[Any] = list(arms)
        rng.shuffle(order)
        if copy is not None:  # at every place in turn (the arms' seeded order stays as it was without it)
            order.insert(n % (len(order) + 1), COPY)
        for key in order:
            if key == COPY:
                copied.append(timer(copy.launch, shared.method).median_ms)
                continue
            samples[key].append((shared.time(arms[key], timer) if not own_buffers else
                                 timer(arms[key].launch, shared.method)).median_ms)
    host = {str(key): shared.time(arm, timer, HOST).median_ms for key, arm in arms.items()}  # apart from the clock
    ceiling = (ceiling_record(shared.nbytes, statistics.median(copied)) if copied else
               {"bytes": shared.nbytes, "copy_ms": None, "why_not": why_no_copy})
    return {"samples": {str(k): v for k, v in samples.items()}, "errors": {str(k): v for k, v in errors.items()},
            "timing": shared.method, "buffers": "own" if own_buffers else "shared", "host_ms": host,
            "ceiling": ceiling, **arms_notes(shared)}


def _copy_arm(nbytes: int, device: str) -> tuple[Prepared | None, str]:
    """The shape's copy-ceiling arm (:mod:`paretotune.measure.ceiling`), or None and why not: a kernel with no
    tensors, or no room on the device for a second copy of its bytes (its own arms are timed all the same)."""
    if nbytes <= 0:
        return None, "the kernel's arguments and outputs hold no tensor bytes"
    try:
        arm = copy_arm(nbytes, device)
        arm.launch()
        sync(device)
        return arm, ""
    except Exception as exc:  # noqa: BLE001 - out of memory above all: the ceiling is a figure beside, not a gate
        return None, f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
