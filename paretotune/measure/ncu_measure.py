"""ncu objectives for a batch: one Nsight Compute process profiles every (candidate, shape) of the batch.

Each item is launched once inside its own NVTX range (``paretotune.ncu``); values are matched back by range
name. The child process rebuilds each candidate through the kernel adapter with its ACF, like the GPU worker, and
binds every item of a shape to one shared input set (as search and validate time them).
"""
from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from paretotune.records import Shape, TrialRecord
from paretotune.store.run_dir import RunDir


def measure_batch(shapes: Sequence[Shape], run: RunDir, records: Sequence[TrialRecord],
                  metrics: Sequence[str]) -> dict[int, dict[str, dict[str, float]]]:
    """{candidate_id: {shape: {metric: value}}} for every item ncu measured on the campaign's ``shapes``;
    missing items are left out. The child rebuilds each candidate from the run's own campaign copy."""
    from paretotune.measure.arms import TIMING_SEED
    from paretotune.ncu import BatchItem, NcuOptions, python_child, run_batch

    items = []
    for rec in records:
        for shape in shapes:
            params = {"run_dir": str(run.path), "config": rec.config, "shape": shape.label,
                      "acf": str(run.acf_path(rec.acf)) if rec.acf else None,
                      "seed": TIMING_SEED}
            items.append(BatchItem(rec.candidate_id, shape.label, params))
    workdir = run.path / "ncu" / f"batch{records[0].candidate_id:05d}"
    workdir.mkdir(parents=True, exist_ok=True)
    result = run_batch(items, python_child("paretotune.measure.ncu_measure:make_launch"),
                       NcuOptions(metrics=list(metrics)), workdir=workdir)
    out: dict[int, dict[str, dict[str, float]]] = {}
    for item in result.items:
        if item.status == "ok":
            out.setdefault(int(item.item.candidate_id), {})[item.item.shape] = dict(item.metrics)
    failed = [f"{i.item.range_name}: {i.error}" for i in result.failed()]
    (workdir / "summary.json").write_text(json.dumps({"wall_s": result.wall_s, "n_items": len(items),
                                                      "failed": failed}, indent=1))
    return out


@functools.lru_cache(maxsize=4)
def _kernel(run_dir: str) -> tuple[dict[str, Shape], str, Any]:
    """The run's shapes by label, its device and its kernel adapter, from the run's campaign copy."""
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter

    run = RunDir(run_dir)
    campaign = campaign_from_text(run.campaign_text(), Path(run.meta()["campaign_path"]))
    return {s.label: s for s in campaign.shapes}, campaign.spec.evaluation.device, make_adapter(campaign)


@functools.lru_cache(maxsize=8)
def _shape_inputs(run_dir: str, shape_label: str, seed: int) -> dict[str, Any]:
    """One input set per shape, shared by every item of the batch (as in search and validate)."""
    shapes, device, adapter = _kernel(run_dir)
    return adapter.make_inputs(shapes[shape_label], device, seed)


def make_launch(params: dict[str, Any]) -> Callable[[], Any]:
    """Child-side factory: build the candidate on the GPU, bound to its shape's shared inputs, and return its
    zero-argument launch."""
    shapes, _device, adapter = _kernel(params["run_dir"])
    shape = shapes[params["shape"]]
    acf = Path(params["acf"]) if params["acf"] else None
    inputs = _shape_inputs(params["run_dir"], params["shape"], int(params["seed"]))
    return adapter.prepare(params["config"], shape, acf, inputs).launch
