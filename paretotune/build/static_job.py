"""The static evaluation of one candidate, run inside a CPU worker process.

Per shape: the kernel's PTX for this config (compiled once, cached: ACFs act only in ptxas) → ptxas with the
candidate's ACF → resource usage → objective values. Any failure becomes a failed TrialRecord.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from paretotune.campaign.trial_import import hidden_output
from paretotune.errors import CandidateFailure
from paretotune.build.base import failed_record, scaled_limit
from paretotune.records import Candidate, Shape, TrialRecord
from paretotune.store.atomic import atomic_write
from paretotune.toolchain.arch import TargetArch


@dataclass(frozen=True)
class WorkerContext:
    """Everything a worker needs, sent once at start (picklable)."""

    campaign_path: str
    campaign_text: str
    ptxas_path: str
    ptxas_version: str
    acf_dir: str
    precompile: bool = False  # also compile with the ACF through Triton, filling its cache for the GPU worker
    compile_timeout_s: float = 60.0  # each ptxas run's limit, until the baseline sets a tighter one
    # an event of the pool's context, set once the campaign process imported the kernel on trial: the worker
    # imports user code only then (None: at once, as Ray actors, started after the checks, do)
    kernel_vetted: Any = None


TIMEOUT_ENV = "PARETOTUNE_PTXAS_TIMEOUT_S"  # read by the wrapper on every call: the limit can change per task
LOG_ENV = "PARETOTUNE_PTXAS_LOG"  # where the wrapper appends ptxas's stderr (its ``-v`` report), when set


def ptxas_with_timeout(real: Path, timeout_s: float, folder: Path) -> Path:
    """A ``ptxas`` for Triton that is killed after ``timeout_s`` (or ``$PARETOTUNE_PTXAS_TIMEOUT_S``), and that
    appends its stderr to ``$PARETOTUNE_PTXAS_LOG`` when that is set.

    Triton runs ptxas without a time limit, so a hanging ACF would otherwise hold a worker until the pool's
    deadline and outlive it; exit code 124 (or 137 after the grace kill) then reads as a timeout (see
    :func:`_describe`). Triton passes ``-v`` and deletes the report; kept, it gives the static objectives
    without a second ptxas run, which for some ACFs takes seconds.
    """
    limit = f'timeout -k 5 "${{{TIMEOUT_ENV}:-{timeout_s:g}}}" "{real}" "$@"'
    text = (f'#!/bin/sh\nif [ -n "${LOG_ENV}" ]; then\n  {limit} 2>>"${LOG_ENV}"\n  exit $?\nfi\n'
            f'exec {limit}\n')
    wrapper = folder / f"ptxas-{hashlib.sha256(text.encode()).hexdigest()[:16]}"  # shared by workers, made once
    if not wrapper.exists():
        atomic_write(wrapper, text, mode=0o755)
    return wrapper


_STATE: dict[str, Any] = {}


def init_worker(ctx: WorkerContext) -> None:
    """Runs first in each worker: point Triton at our ptxas *before* importing it, then load the campaign."""
    from paretotune.toolchain.ptxas import Ptxas, export_for_triton

    ptxas = Ptxas(path=Path(ctx.ptxas_path), version=ctx.ptxas_version)
    if ctx.precompile and shutil.which("timeout"):
        wrapper = ptxas_with_timeout(ptxas.path, ctx.compile_timeout_s, Path(tempfile.gettempdir()))
        export_for_triton(Ptxas(wrapper, ptxas.version))
    else:
        export_for_triton(ptxas)
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter, make_objectives
    from paretotune.campaign.trial_import import kernel_mentions_helion, preload_helion
    from paretotune.processes import thread_only_progress_lock

    thread_only_progress_lock()
    _STATE.update(ctx=ctx, ptxas=ptxas)
    try:  # workers start while the campaign process checks the kernel: a kernel that fails to load is its to report
        campaign = campaign_from_text(ctx.campaign_text, Path(ctx.campaign_path))
        if ctx.kernel_vetted is not None:
            if kernel_mentions_helion(campaign):  # trusted and slow: while the campaign process imports the
                preload_helion()  # kernel on trial
            ctx.kernel_vetted.wait()
        with hidden_output():  # the campaign process's trial import shows what the kernel prints, once
            adapter = make_adapter(campaign)
        _STATE.update(shapes=campaign.shapes, target=campaign.target, multi_shape=campaign.multi_shape,
                      adapter=adapter, objectives=make_objectives(campaign), ptx_cache={})
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt at import too: each candidate of
        _STATE["init_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]  # this worker fails with it
        return
    if ctx.precompile:
        warm_up_compiler(adapter, _STATE["shapes"], _STATE["target"])


def warm_up_compiler(adapter: Any, shapes: Sequence[Shape], target: TargetArch) -> None:
    """Compile the default config for every shape, on the CPU only, so that a fresh process's first candidate
    does not pay the compiler's cold start (a worker's first Helion compiles take a few times as long as later
    ones; docs/results.md). Nothing runs on the GPU, where another worker may be timing. Errors are left for the
    baseline candidate to report."""
    with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()):
        for shape in shapes:
            adapter.precompile(adapter.default_config(shape), shape, None, target)


def _ptx(config: dict[str, Any], shape: Any) -> Any:
    key = (repr(sorted(config.items())), shape.label)
    cache = _STATE["ptx_cache"]
    if key not in cache:
        buf = io.StringIO()  # Triton prints the whole PTX to stdout on a ptxas error
        with contextlib.redirect_stdout(buf):
            cache[key] = _STATE["adapter"].compile_ptx(config, shape, _STATE["target"])
    return cache[key]


def scaled_ptxas_timeout(baseline: TrialRecord, evaluation: Any) -> float:
    """The ptxas time limit for search candidates: ``compile_timeout_vs_baseline`` times the baseline's ptxas
    seconds, within [``compile_timeout_min_s``, ``compile_timeout_s``]. An ACF that makes ptxas take many times
    the default's time is a failed candidate, not a reason to hold the whole generation for a minute."""
    ptxas_s = baseline.stages.get("ptxas_s") if baseline.status == "ok" else None
    return scaled_limit(evaluation.compile_timeout_vs_baseline, ptxas_s, evaluation.compile_timeout_min_s,
                        evaluation.compile_timeout_s)


POOL_GRACE_S = 5.0  # beyond a candidate's own limits: its worker reports a ptxas cut itself, before the pool's
UNSCALED_GRACE_S = 30.0  # the limit before the baseline (or with build_timeout_vs_baseline 0): per shape + this


def build_limit_s(baseline: TrialRecord | None, evaluation: Any, n_shapes: int) -> float:
    """The build pool's limit on one search candidate's whole build (every shape, in its worker): per shape,
    ``build_timeout_vs_baseline`` times the baseline's build (within [``compile_timeout_min_s``,
    ``compile_timeout_s``], as the ptxas limit), plus twice the ptxas limit (a build that ends
    in a ptxas cut reports it itself, and such builds ran past one limit). Triton's front end runs in the worker
    and only a kill ends it, and some configs make it take minutes where the baseline takes a second: each held
    a worker, and the search round waiting for it, for ``compile_timeout_s`` + 30 s (docs/results.md has both
    figures). Without a baseline figure or with a factor of 0: that old limit."""
    factor = evaluation.build_timeout_vs_baseline
    if baseline is None or baseline.status != "ok" or not factor or baseline.compile_s <= 0:
        return evaluation.compile_timeout_s * n_shapes + UNSCALED_GRACE_S
    front = scaled_limit(factor, baseline.compile_s / n_shapes, evaluation.compile_timeout_min_s,
                         evaluation.compile_timeout_s)
    return n_shapes * (front + 2 * scaled_ptxas_timeout(baseline, evaluation)) + POOL_GRACE_S


def job_after_baseline(baseline: TrialRecord | None, evaluation: Any) -> Callable[[Candidate], TrialRecord]:
    """The pool job for search candidates: :func:`evaluate_static` with the ptxas limit the baseline sets."""
    if baseline is None:
        return evaluate_static
    return partial(evaluate_static, ptxas_timeout_s=scaled_ptxas_timeout(baseline, evaluation))


def _precompile(config: dict[str, Any], shape: Any, acf: Path | None) -> tuple[Any, Any]:
    """Triton's compile of the candidate, and the resource usage from its own ptxas report (None if Triton
    found the build in its cache, or ran ptxas without our wrapper)."""
    from paretotune.toolchain.ptxas import stats_from_log

    fd, name = tempfile.mkstemp(prefix="paretotune-ptxas-", suffix=".log")
    os.close(fd)
    log = Path(name)
    os.environ[LOG_ENV] = str(log)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            kptx = _STATE["adapter"].precompile(config, shape, acf, _STATE["target"])
    finally:  # kept for _describe too: on a ptxas error Triton's message lacks ptxas's own words
        _STATE["ptxas_log"] = log.read_text(errors="replace")
        os.environ.pop(LOG_ENV, None)
        log.unlink(missing_ok=True)
    return kptx, stats_from_log(_STATE["ptxas_log"], kptx.kernel_name, num_warps=kptx.num_warps,
                                dynamic_shared=kptx.dynamic_shared)


def evaluate_static(candidate: Candidate, ptxas_timeout_s: float | None = None) -> TrialRecord:
    """Build the candidate for every shape and read every static objective; never raises.

    ``ptxas_timeout_s`` limits each ptxas run (ours and the one inside Triton's compile); default: the
    worker context's ``compile_timeout_s`` (the campaign's).
    """
    from paretotune.objectives.base import ShapeMeasurement
    from paretotune.toolchain.ptxas import build_ptx

    if "init_error" in _STATE:
        return failed_record(candidate, f"the build worker could not load the campaign: {_STATE['init_error']}")
    target = _STATE["target"]
    timeout_s = ptxas_timeout_s or _STATE["ctx"].compile_timeout_s
    _STATE["ptxas_timeout_s"] = timeout_s
    os.environ[TIMEOUT_ENV] = f"{timeout_s:g}"
    start = time.perf_counter()
    values: dict[str, float] = {}
    extra: dict[str, Any] = {}
    stages: Counter[str] = Counter()
    acf = Path(_STATE["ctx"].acf_dir) / f"{candidate.acf}.acf" if candidate.acf else None
    try:
        precompile = _STATE["ctx"].precompile
        for shape in _STATE["shapes"]:
            t0 = time.perf_counter()
            build = None
            if precompile:  # one Triton compile, with the ACF, serves the GPU worker's cache and gives the PTX
                kptx, build = _precompile(candidate.config, shape, acf)
            else:
                kptx = _ptx(candidate.config, shape)
            t1 = time.perf_counter()
            # ptxas -v ourselves when not precompiled, on a Triton cache hit (no ptxas ran), and for the baseline,
            # whose ptxas time sets the search candidates' limit (scaled_ptxas_timeout) and so must be measured
            if build is None or candidate.is_baseline:
                build = build_ptx(_STATE["ptxas"], kptx.ptx, target, acf, kernel_name=kptx.kernel_name,
                                  num_warps=kptx.num_warps, dynamic_shared=kptx.dynamic_shared,
                                  timeout_s=timeout_s, enable_fp_fusion=kptx.enable_fp_fusion)
                stages["ptxas_s"] += time.perf_counter() - t1
            m = ShapeMeasurement(shape=shape.label, target=target, build=build)
            extra[shape.label] = build.stored()  # read back by BuildStats.from_stored (the integrity check)
            stages["precompile_s" if precompile else "ptx_s"] += t1 - t0
            for obj in _STATE["objectives"]:
                if obj.stage != "static":
                    continue
                values[obj.column(shape.label, _STATE["multi_shape"])] = obj.value(m)
    except CandidateFailure as exc:
        return failed_record(candidate, str(exc), time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - a candidate's failure is data
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
        return failed_record(candidate, _describe(exc, where), time.perf_counter() - start)
    return TrialRecord(candidate_id=candidate.candidate_id, generation=candidate.generation, config=candidate.config,
                       acf=candidate.acf, is_baseline=candidate.is_baseline, status="ok", values=values,
                       compile_s=time.perf_counter() - start, extra=extra, stages=dict(stages))


def _describe(exc: Exception, where: str) -> str:
    """One line for a failed build; Triton's ptxas killed by :func:`ptxas_with_timeout` reads as a timeout."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    if type(exc).__name__ == "PTXASError" and ("error code 124" in first or "error code 137" in first):
        return f"ptxas timed out after {_STATE['ptxas_timeout_s']:g} s (in Triton's compile)"
    if type(exc).__name__ == "PTXASError":  # ptxas's own words went to the wrapper's log, not to Triton
        said = [line for line in _STATE.get("ptxas_log", "").splitlines() if line.strip()]
        if said:
            return f"{first.strip('`')}: {said[-1].strip()}"
    if type(exc).__name__ == "CompilationError":  # Triton's: where in the kernel first, why last (or as the cause)
        cause = exc
        while cause.__cause__ is not None:
            cause = cause.__cause__
        lines = (str(cause) if cause is not exc else str(exc)).strip().splitlines()
        if lines and lines[-1].strip() != first.strip():
            return f"CompilationError {first.rstrip(': ')}: {lines[-1].strip()}"
    return f"{type(exc).__name__}: {first}{where}"

