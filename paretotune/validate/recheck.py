"""Nothing wrong ships: each validated winner is re-checked against its no-ACF twin on inputs nobody used yet.

A sizeable share of the ACFs CompileIQ samples can give wrong answers (docs/results.md); the search rejects
those on the inputs it checks. Before a winner is shipped (``paretotune ship``) it is run again beside the same
config without its ACF (its twin; a winner without an ACF beside the shape's baseline build) on fresh inputs:
several seeds the search and ``validate`` never drew, each also with every floating-point input scaled up and
down by large factors. Everything the reference returns and every argument it writes must match within the
spec's tolerances; the record says how many checks passed and whether every output was bit-identical.

A sampled ACF can hang the GPU on an input it was never run on, so the checks run
in a spawned worker that reports each job as it starts and ends (a progress file); the parent kills a worker
whose job runs past its time limit (or that dies), records that job as failed and starts a fresh worker for
the rest. :func:`recheck_pair` is the logic, CPU-testable with torch adapters; :func:`run_jobs` the process
handling, testable with any worker function.
"""
from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from paretotune.measure.arms import clone_tree, declared_writes, poison, restore, sync, tensor_leaves, written_by
from paretotune.measure.timing import check_output
from paretotune.kernels.base import Inputs, KernelAdapter
from paretotune.records import Shape

SEEDS = 3  # input draws per (candidate, shape)
SCALES = (1.0, 1e3, 1e-3)  # each draw as made, and with every floating-point input scaled by these
SEED_BASE = 1 << 30  # far from the seeds search (campaign_seed * 100003 + id) and validate (seed + 2 + id) draw
START_TIMEOUT_S = 300.0  # a fresh worker imports torch and the kernel, initialises CUDA, builds its first arms


def recheck_seeds(campaign_seed: int, n: int = SEEDS) -> list[int]:
    return [SEED_BASE + 7919 * i + campaign_seed for i in range(n)]


def scaled(inputs: Inputs, factor: float) -> Inputs:
    """``inputs`` with every floating-point tensor multiplied by ``factor`` in place (rounded to its dtype)."""
    if factor != 1.0:
        for leaf in tensor_leaves(inputs):
            if leaf.is_floating_point():
                leaf.copy_((leaf.float() * factor).to(leaf.dtype))
    return inputs


def _bits(tensor: Any) -> Any:
    return tensor.detach().contiguous().reshape(-1).view(__import__("torch").uint8)


def identical(a: Any, b: Any) -> bool:
    """Whether two outputs (tensors or trees of them) are the same bits, NaNs included."""
    import torch

    la, lb = tensor_leaves(a), tensor_leaves(b)
    return len(la) == len(lb) and all(x.dtype == y.dtype and x.shape == y.shape and torch.equal(_bits(x), _bits(y))
                                      for x, y in zip(la, lb))


def recheck_pair(adapter: KernelAdapter, config: dict[str, Any], reference_config: dict[str, Any], shape: Shape,
                 acf: Path | None, device: str, seed: int, factor: float) -> tuple[str | None, bool]:
    """(why the candidate's output differs from the reference build's, or None; whether it is bit-identical) on
    fresh inputs from ``seed`` scaled by ``factor``. The reference is ``reference_config`` without an ACF."""
    inputs = scaled(adapter.make_inputs(shape, device, seed), factor)
    leaves = tensor_leaves(inputs)
    pristine = [leaf.clone() for leaf in leaves]
    ref = adapter.prepare(reference_config, shape, None, inputs)
    poison(ref)
    expected = clone_tree(ref.launch())
    sync(device)
    written = written_by(leaves, pristine, declared_writes(ref))
    after = {i: leaves[i].clone() for i in written}
    if not tensor_leaves(expected) and not written:
        return "the reference build returned no tensor and wrote no argument", False
    restore(leaves, pristine)
    cand = adapter.prepare(config, shape, acf, inputs)
    poison(cand)
    got = clone_tree(cand.launch())
    sync(device)
    same = identical(got, expected) and all(identical(leaves[i], v) for i, v in after.items())
    if tensor_leaves(expected):
        problem = check_output(got, expected, cand.atol, cand.rtol)
        if problem:
            return problem, False
    for i, value in after.items():
        problem = check_output(leaves[i], value, cand.atol, cand.rtol)
        if problem:
            return f"input tensor {i} (the kernel writes it): {problem}", False
    stray = [i for i in written_by(leaves, pristine) if i not in after]
    if stray:
        return f"wrote into input tensor {stray[0]}, which the reference build only reads", False
    return None, same


def recheck_job(adapter: KernelAdapter, shape: Shape, job: dict[str, Any], device: str, seeds: Sequence[int],
                factors: Sequence[float]) -> dict[str, Any]:
    """Every (seed, factor) check of one candidate on one shape: {"run", "passed", "bit_identical",
    "failures" (the first three, each with its seed and factor), "reference"}."""
    acf = Path(job["acf_path"]) if job.get("acf_path") else None
    reference = dict(job["config"]) if acf is not None else adapter.default_config(shape)
    run = passed = 0
    same, failures = True, []
    for seed in seeds:
        for factor in factors:
            run += 1
            try:
                problem, bits = recheck_pair(adapter, dict(job["config"]), reference, shape, acf, device, seed, factor)
            except Exception as exc:  # noqa: BLE001 - a build or launch that fails is a failed check
                problem, bits = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}", False
            if problem is None:
                passed += 1
            elif len(failures) < 3:
                failures.append(f"seed {seed}, inputs x{factor:g}: {problem}")
            same = same and bits
    return {"run": run, "passed": passed, "bit_identical": bool(same and passed == run),
            "failures": failures, "reference": "no-ACF twin" if acf is not None else "baseline build"}


def job_key(job: dict[str, Any]) -> str:
    return f"{int(job['candidate_id'])}@{job['shape']}"


# -- the worker process -------------------------------------------------------------------------------------------

def recheck_worker(campaign_path: str, campaign_text: str, ptxas_path: str, ptxas_version: str, seeds: list[int],
                   factors: list[float], jobs: list[dict[str, Any]], progress: str) -> None:
    """Spawned: build the campaign's adapter and run ``jobs`` in order, writing a ``start`` line before and a
    ``done`` line after each to ``progress`` (so the parent knows which job a hang or crash belongs to)."""
    from paretotune.toolchain.ptxas import Ptxas, export_for_triton

    with open(progress, "a", encoding="utf-8") as out:
        try:
            export_for_triton(Ptxas(path=Path(ptxas_path), version=ptxas_version))
            from paretotune.campaign.load import campaign_from_text
            from paretotune.campaign.resolve import make_adapter

            campaign = campaign_from_text(campaign_text, Path(campaign_path))
            adapter = make_adapter(campaign)
        except Exception as exc:  # noqa: BLE001 - said in the progress file, so the parent can name it
            report(out, {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"})
            raise
        shapes = {s.label: s for s in campaign.shapes}
        device = campaign.spec.evaluation.device
        for job in jobs:
            report(out, {"start": job_key(job)})
            result = recheck_job(adapter, shapes[job["shape"]], job, device, seeds, factors)
            report(out, {"done": job_key(job), "result": result})


def report(out: Any, event: dict[str, Any]) -> None:
    out.write(json.dumps(event) + "\n")
    out.flush()


def _events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a kill
            break
    return events


def failed(why: str) -> dict[str, Any]:
    return {"run": 1, "passed": 0, "bit_identical": False, "failures": [why], "reference": ""}


def run_jobs(jobs: list[dict[str, Any]], target: Callable[..., None], args: tuple[Any, ...], scratch: Path, *,
             job_timeout_s: float, start_timeout_s: float = START_TIMEOUT_S, poll_s: float = 0.1
             ) -> dict[str, dict[str, Any]]:
    """job key -> result, running ``target(*args, jobs_left, progress_path)`` in spawned processes. A job that
    runs past ``job_timeout_s``, or whose worker dies, is recorded as failed and a fresh worker takes the jobs
    after it; a worker that starts no job within ``start_timeout_s`` (or dies first) fails every job left."""
    ctx = multiprocessing.get_context("spawn")
    results: dict[str, dict[str, Any]] = {}
    left = list(jobs)
    for attempt in range(1, len(jobs) + 1):
        if not left:
            break
        progress = scratch / f"recheck-progress-{attempt}.jsonl"
        proc = ctx.Process(target=target, args=(*args, left, str(progress)), daemon=True)
        proc.start()
        started, current, since, cut, error = False, None, time.monotonic(), "", ""
        while True:
            alive = proc.is_alive()
            for event in _events(progress):
                if "error" in event:
                    error = f" ({event['error']})"
                elif "start" in event and event["start"] not in results:
                    started = True
                    if current != event["start"]:
                        current, since = event["start"], time.monotonic()
                elif "done" in event and event["done"] not in results:
                    results[event["done"]] = event["result"]
                    current, since = None, time.monotonic()
            if not alive:
                break
            limit = job_timeout_s if started else start_timeout_s
            if time.monotonic() - since > limit:
                proc.kill()
                cut = f"timed out after {limit:g} s (its worker was killed)"
                break
            time.sleep(poll_s)
        proc.join()
        why = cut or f"its re-check worker exited with code {proc.exitcode}{error}"
        if not started:
            for job in left:
                results.setdefault(job_key(job), failed(f"{why} before it started any check"))
        elif current is not None:
            results.setdefault(current, failed(why))
        left = [j for j in left if job_key(j) not in results]
        if left and not cut and proc.exitcode == 0:  # a worker that returned without running its jobs
            for job in left:
                results.setdefault(job_key(job), failed("its re-check worker returned without running it"))
            left = []
    for job in left:  # every attempt's worker died between jobs
        results.setdefault(job_key(job), failed("not run: its re-check workers kept dying"))
    return results


def recheck_in_fresh_processes(run: Any, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """Re-check ``jobs`` ({candidate_id, shape, config, acf_path}) for the run: what ``recheck.json`` holds."""
    import tempfile

    from paretotune.campaign.load import campaign_from_text
    from paretotune.toolchain.ptxas import find_ptxas

    meta = run.meta()
    campaign = campaign_from_text(run.campaign_text(), Path(meta["campaign_path"]))
    seeds = recheck_seeds(int(meta.get("seed", 0)))
    ptxas = find_ptxas()
    limit = float(campaign.spec.evaluation.measure_timeout_s)
    with tempfile.TemporaryDirectory(prefix="paretotune-recheck-") as scratch:
        results = run_jobs(jobs, recheck_worker, (meta["campaign_path"], run.campaign_text(), str(ptxas.path),
                                                   ptxas.version, seeds, list(SCALES)), Path(scratch),
                           job_timeout_s=limit, start_timeout_s=START_TIMEOUT_S, poll_s=0.2)
    return {"seeds": seeds, "scales": list(SCALES), "job_timeout_s": limit,
            "checks": [{"candidate_id": int(j["candidate_id"]), "shape": j["shape"], **results[job_key(j)]}
                       for j in jobs]}


def passed(check: dict[str, Any]) -> bool:
    """A re-check counts only if it ran and every check passed."""
    return int(check.get("run", 0)) > 0 and int(check.get("passed", -1)) == int(check["run"])
