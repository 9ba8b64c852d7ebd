"""Time to quality on one GPU: the fastest kernel each tool reaches for the wall time it is given (issue 19).

Per kernel, one after another on the same GPU:

- paretotune ``default`` (the campaign names no engine: ``engine: auto``, for a Helion kernel Helion's own
  LFBOTreeSearch over its ConfigSpec with CompileIQ ACFs as one more dimension, ``paretotune/search/
  helion_search.py``), and on request today's ``joint`` (CompileIQ over the flattened knobs), ``sequential`` and
  ``acf-only``: runtime objective, ``search.wall_clock_s`` = the largest budget, which counts the CLI's start-up;
  each a CLI run in its own process, exactly as a user runs it;
- Helion's autotuner (Helion kernels): its own config space and search (``LFBOTreeSearch``, effort
  ``--helion-effort``, default Helion's own default ``full``), ``autotune_search_acf`` = 8 CompileIQ samples of
  the PTXAS 13.3 space drawn once per invocation (``OUT/helion_acfs/``; ``--helion-acfs shipped``: the older list
  in ``benchmarks/inputs/ttq_acfs``; Helion always tries no-ACF too), Helion's guards as it ships them (each
  config compiled in a forked child with a timeout, benchmarked in a spawned worker it kills after 30 s; Helion
  itself benchmarks kernels that write their inputs in process) or with ``--helion-in-process`` none of them,
  ``autotune_budget_seconds`` = the largest budget less the seconds its process took to reach autotuning (so it
  ends when a paretotune arm does); both tools get the same inputs (``paretotune.kernels.workloads``);
- Triton's ``@triton.autotune`` over its configs (the Triton kernel: docs/examples/autotuned.py).

Best runtime reached vs wall seconds comes from each tool's own timeline, counted from its process start
(paretotune: record times; Helion: its autotune CSV; Triton: one point when autotune returns). Each smaller
budget is read off the same run (the best reached by then: no tool plans by its budget). At the end the kernel
each tool had reached by each budget is re-timed side by side in one fresh process on the same buffers with
paretotune's validation worker (interleaved rounds against the default config and a baseline-vs-baseline
control; Welch + Holm, bootstrap CI), each one with an ACF beside the same config without it, so that a gain
splits into the config's share and the ACF's. Also recorded per paretotune run: GPU-side build seconds per
candidate, the GPU-busy fraction (run.json ``timing``) and where its start-up went (``start_s``).

Writes OUT/ttq.json (everything, partial after each kernel), OUT/ttq.csv (the table), OUT/ttq.png (best
runtime vs wall seconds) and each run directory. One command:

    python benchmarks/bench_time_to_quality.py --out benchmarks/results/ttq-h200        # ~10 min (see plan)
    python benchmarks/bench_time_to_quality.py --out /tmp/ttq-smoke --smoke             # ~1-2 min

Issue 42's table (ten pretuned kernels at 60 and 120 s, two of them at 300 s). ``--check`` first, on any
machine (no GPU: every arm's campaign, kernel, engine and first batch; with ``--gpus``, the jobs and when they
would end). On one GPU, one pretuned kernel at 60/120 s fits a 10-minute call (two arms of 120 s, the
re-timing: ~5 min); every call with the same ``--out`` adds its kernel to ``OUT/ttq.json``:

    python benchmarks/bench_time_to_quality.py --check --kernels pretuned_all --budgets 60,120 --out /tmp/ttq-check
    python benchmarks/bench_time_to_quality.py --out R --kernels pretuned_rms_norm --budgets 60,120

A 300 s budget does not fit one call on one GPU: its arms in two calls (``--retime skip``), then ``--retime only``:

    python benchmarks/bench_time_to_quality.py --out R --kernels pretuned_rms_norm --budgets 60,120,300 \
        --helion-effort none --retime skip
    python benchmarks/bench_time_to_quality.py --out R --kernels pretuned_rms_norm --budgets 60,120,300 \
        --strategies none --retime skip
    python benchmarks/bench_time_to_quality.py --out R --kernels pretuned_rms_norm --budgets 60,120,300 --retime only

On one GPU, the table over several device calls: ``--gpus 1 --split-arms`` makes each kernel three jobs (its
paretotune arm, Helion's arm, the re-timing of both), runs those that fit ``--max-s`` and records them under
OUT/parts/; the same command in the next call (OUT travelling with the tree) leaves out every job an earlier call
ran to the end (``OUT/fanout.jsonl``) and goes on from there, with the Helion ACF list the first call drew. A
kernel whose parts ran on another GPU model is left out (a call may land on another kind of machine), or with
``--redo-other-gpu WHY`` has its parts moved to OUT/superseded/WHY/ and runs whole on this one. In
``benchmarks/gpu_session.sh``: ``TTQ_OUT=benchmarks/results/ttq42 TTQ_END=<epoch second the call must end by>
TTQ_ARGS="<the 300 s kernels' arguments>" TTQ_MORE_ARGS="--gpus 1 --split-arms --budgets 60,120 --kernels ..."
bash benchmarks/gpu_session.sh env ttq ttq_more`` (benchmarks/results/ttq42/README.md has the whole command).
Between sessions the folder's raw runs are packed (``benchmarks/archive_runs.py``); a run on it is refused until
they are unpacked in place (the re-timings read the arms' ACF files; Helion's list must not be drawn again).

On a host with several GPUs, ``--gpus`` runs one kernel's job per GPU side by side, each child seeing only its
GPU and pinned to that GPU's share of the host's cores (an H200 host has 16 per GPU, so each job builds on as
many cores as on a one-GPU host; Helion's precompile pool is sized to the share too). Each job writes
``OUT/parts/<job>/``; at the end every part under OUT (earlier calls' too) is merged into ``OUT/ttq.json``.
``--split-arms`` runs a kernel's paretotune arm and Helion's arm on two GPUs at once and then re-times both on
one, so a 300 s kernel fits one call. Two commands may share OUT on different GPUs; ``--merge`` then writes the
one table. On an 8-GPU host the whole table is two calls (the 300 s runs give their kernels' 60 and 120 s
figures too; about 300 s and 360 s by the estimates):

    python benchmarks/bench_time_to_quality.py --out R --gpus 8 --budgets 60,120 --kernels pretuned_softmax,\
    pretuned_vector_add,pretuned_cross_entropy,pretuned_silu_mul_fp8,pretuned_dynamic_per_token_scaled_fp8_quant,\
    pretuned_rms_norm_dynamic_per_token_quant,pretuned_rms_norm_per_block_quant,pretuned_scaled_mm
    python benchmarks/bench_time_to_quality.py --out R --gpus 4 --split-arms --budgets 60,120,300 \
        --kernels pretuned_rms_norm,pretuned_layer_norm
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from common import GpuJob, GpuSlot, gpu_slots, host_gpu_names, run_meta, run_on_gpus, run_with_watchdog
from common import cpu_model, cpu_topology, cuda_context_holders, helion_csv_rows, load_average, startup_s
from common import stored_records
from paretotune.measure.ceiling import bandwidth  # validate's own rule; the module imports no torch
ROOT = Path(__file__).resolve().parents[1]
ACF_DIR = ROOT / "benchmarks" / "inputs" / "ttq_acfs"
WORKLOADS = ROOT / ".workloads" / "helion-pretuned-sm90"  # git-ignored; ../shared/workloads/README.md makes it
STRATEGIES = ("default", "joint", "sequential", "acf-only")  # default: the campaign names no engine (auto)
DEFAULT_STRATEGIES = ("default",)
HELION_ACFS = 8  # CompileIQ samples in Helion's autotune_search_acf list
AFTER_BUDGET_S = 27.0  # per arm past its budget: candidates in flight, closing, the summary (H200, 2026-12-05:
# paretotune arms of 120 s ended at 130-141 s, of 300 s at 317-326 s; Helion's, killed by its watchdog 15 s past the
# budget, at 140-142 s: an estimate of 15 s let a job start that the deadline then killed)
TRITON_ARM_S = 40.0  # Triton's autotune over its configs, imports included
RETIME_S = 70.0  # per kernel: the winners by each budget and their no-ACF twins, re-timed in a fresh process
# (calls 1-11 of results/ttq42: 9-51 s on the H200, 44.5-67.6 s on the H100's fp8 kernels; 50 s let a job start
# that could end past the deadline)
CONTEXT_LOOK_S = 45.0  # when a paretotune arm looks which of its processes hold a CUDA context (its start-up done:
# first records came 28-38 s in on the H200); which do may say where its 15-19 s kernel import goes


# -- the kernels --------------------------------------------------------------------------------------------
def kernels() -> dict[str, dict[str, Any]]:
    """name -> campaign kernel block, shape, and how the other tool runs it. The ten pretuned kernels at the
    first shape ``paretotune.kernels.workloads.WORKLOAD_SHAPES`` lists (one their own ``main()`` benchmarks),
    except layer_norm at 4096 x 4096 (the earlier time-to-quality records' shape, also in its ``main()``)."""
    from paretotune.kernels.workloads import TOLERANCES, WORKLOAD_SHAPES, WORKLOAD_SOURCES

    dtypes = {"softmax": "float16", "rms_norm": "bfloat16", "layer_norm": "float16"}  # as the earlier records
    out: dict[str, dict[str, Any]] = {
        "helion_softmax": {"kernel": {"source": "paretotune.kernels.bundled.helion_softmax:helion_softmax"},
                           "shape": {"M": 4096, "N": 8192, "dtype": "float16"}, "other": "helion",
                           "helion": ("paretotune.kernels.bundled.helion_softmax", "softmax"),
                           "helion_spec": "paretotune.kernels.bundled.helion_softmax:helion_softmax"},
    }
    for name, shapes in WORKLOAD_SHAPES.items():
        dims = {"M": 4096, "N": 4096} if name == "layer_norm" else dict(shapes[0])
        if name in dtypes:
            dims["dtype"] = dtypes[name]
        where = WORKLOAD_SOURCES.get(name, f"{name}/{name}.py:{name}")
        block: dict[str, Any] = {"source": str(WORKLOADS / where), "inputs": f"paretotune.kernels.workloads:{name}"}
        if name in TOLERANCES:  # fp8 outputs, compared as the kernels' own benchmarks compare them
            block.update(atol=TOLERANCES[name], rtol=TOLERANCES[name])
        out[f"pretuned_{name}"] = {"kernel": block, "shape": dims, "other": "helion",
                                   "helion": (str(WORKLOADS / where.rpartition(":")[0]), where.rpartition(":")[2]),
                                   "inputs": f"paretotune.kernels.workloads:{name}"}
    autotuned = str(ROOT / "docs" / "examples" / "autotuned.py")
    out["triton_autotune_rms_norm"] = {"kernel": {"source": f"{autotuned}:rms_norm"},
                                       "shape": {"rows": 4096, "n_cols": 2048}, "other": "triton"}
    return out


DEFAULT_KERNELS = ("helion_softmax", "triton_autotune_rms_norm")  # ~10 min; the pretuned ones: see --kernels
PRETUNED_ALL = "pretuned_all"  # --kernels shorthand: the ten pretuned kernels below
# The ten the workloads script materialises (../shared/workloads/README.md), the table's rows; the rope kernels
# are run by name only (rope_fwd's file is added by hand, fused_qk_norm_rope's is not materialised)
PRETUNED_TEN = ("softmax", "rms_norm", "layer_norm", "vector_add", "cross_entropy", "silu_mul_fp8",
                "dynamic_per_token_scaled_fp8_quant", "rms_norm_dynamic_per_token_quant", "rms_norm_per_block_quant",
                "scaled_mm")


def campaign_text(name: str, spec: dict[str, Any], strategy: str, budget_s: float, workers: int) -> str:
    """A runtime campaign; ``default`` names no engine (paretotune's default, ``auto``), the others pin
    CompileIQ (today's joint, sequential and acf-only)."""
    lines = [f"name: ttq-{name}-{strategy}", "kernel:"]
    lines += [f"  {k}: {json.dumps(v)}" for k, v in spec["kernel"].items()]
    shape = ", ".join(f"{k}: {json.dumps(v)}" for k, v in spec["shape"].items())
    engine = "" if strategy == "default" else "engine: compileiq, "
    lines += ["shapes:", f"  - {{name: s, {shape}}}", "objectives: [runtime]", "acf: {search_space: ptxas-13.3}",
              f"search: {{{engine}strategy: {'joint' if strategy == 'default' else strategy}, generations: 1000, "
              f"pool_size: 10, wall_clock_s: {budget_s:g}}}", f"evaluation: {{workers: {workers}}}"]
    return "\n".join(lines) + "\n"


def compileiq_acfs(folder: Path, n: int) -> list[str]:
    """``n`` distinct CompileIQ samples of the PTXAS 13.3 space as content-named files (Helion's ACF list)."""
    from paretotune.search.acf_list import AcfLists
    from paretotune.search.space import SearchSpace

    folder.mkdir(parents=True, exist_ok=True)
    lists = AcfLists(SearchSpace(knobs={}, acf="generated"), n)
    drawn: list[bytes] = []
    while len(drawn) < n:
        drawn += [d for d in lists.draw(n - len(drawn)) if d not in drawn]
    paths = []
    for data in drawn:
        import hashlib

        path = folder / f"{hashlib.sha256(data).hexdigest()[:16]}.acf"
        path.write_bytes(data)
        paths.append(str(path))
    return sorted(paths)


def child_env() -> dict[str, str]:
    """This environment with the project first on PYTHONPATH (kept: a GPU host's bundle lives there too)."""
    rest = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": str(ROOT) + (os.pathsep + rest if rest else "")}


# -- arms ---------------------------------------------------------------------------------------------------
def paretotune_arm(work: Path, name: str, spec: dict[str, Any], strategy: str, budget_s: float,
                   workers: int) -> dict[str, Any]:
    """One CLI run; the timeline from the records' store times (results.jsonl mtime is not enough: we poll)."""
    folder = work / name / strategy
    folder.mkdir(parents=True, exist_ok=True)
    cfg = folder / "campaign.yaml"
    cfg.write_text(campaign_text(name, spec, strategy, budget_s, workers))
    out = folder / "run"
    cmd = [sys.executable, "-m", "paretotune.cli", "run", str(cfg), "--out", str(out), "--quiet"]
    start = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=child_env())
    seen: dict[int, float] = {}  # candidate id -> seconds since start when first seen stored
    results = out / "results.jsonl"
    contexts, looked = None, False  # the look: None where nvidia-smi did not answer
    while proc.poll() is None:
        _read_new(results, seen, start)
        time.sleep(0.5)
        if not looked and time.time() - start >= CONTEXT_LOOK_S:
            looked, at_s, found = True, round(time.time() - start, 1), cuda_context_holders(proc.pid)
            contexts = None if found is None else {"at_s": at_s, **found}
        if time.time() - start > budget_s + 120:
            proc.kill()
    _read_new(results, seen, start)
    log = proc.stdout.read() if proc.stdout else ""
    row: dict[str, Any] = {"tool": f"paretotune-{strategy}", "command": " ".join(cmd), "returncode": proc.returncode,
                           "wall_s": time.time() - start, "run_dir": str(out), "log_tail": log[-1500:]}
    if not results.exists():
        return {**row, "error": "no run (see log_tail)", "timeline": []}
    from paretotune import UserError

    try:
        records = stored_records(out)
    except UserError as exc:
        return {**row, "error": f"run unreadable: {exc}", "timeline": []}
    meta = run_meta(out)
    timing = (meta.get("timing") or [{}])[-1]
    timeline = []
    for rec in records:
        value = rec.values.get("runtime")
        if rec.status == "ok" and value is not None:
            timeline.append((seen.get(rec.candidate_id, row["wall_s"]), float(value), rec.candidate_id))
    base = next((r for r in records if r.is_baseline), None)
    by_id = {r.candidate_id: r for r in records}
    timeline = sorted(timeline)
    points = {cid: {"config": by_id[cid].config, "acf_path": str(out / "acf" / f"{by_id[cid].acf}.acf")
                    if by_id[cid].acf else None, "is_baseline": by_id[cid].is_baseline,
                    "search_speedup": paired_speedup(by_id[cid])}
              for cid in improvements(timeline)}
    held = [r.measure_s - r.stages.get("gpu_start_s", 0.0) for r in records if r.measure_s > 0 and not r.is_baseline]
    return {**row, "candidates": len(records) - 1, "failed": sum(r.status != "ok" for r in records),
            "baseline_ms": base.values.get("runtime") if base else None, "timeline": timeline, "points": points,
            "gpu_busy_fraction": timing.get("gpu_busy_fraction"), "schedule": timing.get("schedule"),
            "gpu_build_s_per_candidate": timing.get("gpu_build_s_per_candidate"), "phases_s": timing.get("phases_s"),
            "start_s": meta.get("start_s"), "kernel_import_s": meta.get("kernel_import_s"),
            "max_candidate_gpu_s": max(held, default=None),
            "hung_candidates": timing.get("hung_candidates"), "gpu_lost_s": timing.get("gpu_lost_s"),
            "clocks": timing.get("clocks"), "baseline_drift": timing.get("baseline_drift"),
            "host_load": timing.get("host_load"), "cuda_contexts": contexts,
            "search_errors": meta.get("search_errors")}  # the engine's errors it went on past (Helion's rounds)


def paired_speedup(record: Any) -> float | None:
    """The search's own speedup of a record: its paired baseline's time over its time (one shape)."""
    figures = next(iter(record.extra.values()), {}) if record.extra else {}
    ratio = figures.get("ratio_to_baseline") if isinstance(figures, dict) else None
    return 1.0 / ratio if ratio else (1.0 if record.is_baseline else None)


def improvements(timeline: list[Any]) -> list[Any]:
    """The ids of a (time-sorted) timeline's points that improved on every point before them: the only kernels
    a tool can have reached as its best by some budget."""
    out, best = [], float("inf")
    for _, value, key in timeline:
        if value < best:
            best = value
            out.append(key)
    return out


def _read_new(results: Path, seen: dict[int, float], start: float) -> None:
    if not results.exists():
        return
    now = time.time() - start
    for line in results.read_text().splitlines():
        try:
            cid = int(json.loads(line)["candidate_id"])
        except (ValueError, KeyError):
            continue  # a line being written
        seen.setdefault(cid, now)


# How the tools' child processes load a kernel file: as paretotune's arms do (paretotune.campaign.kernel_file, which
# imports no other module of paretotune: a few ms), once. A file executed without a sys.modules entry, as the
# children did before, fails to bind where the kernel reads a module-level name (Helion resolves them through
# sys.modules[fn.__module__]): rms_norm_dynamic_per_token_quant's arm failed with "KeyError: 'ttq_kernel'".
CHILD_LOADER = r"""
import importlib
from pathlib import Path
from paretotune.campaign.kernel_file import load_file
_loaded = {}

def load(module):
    if not module.endswith(".py"):
        return importlib.import_module(module)
    if module not in _loaded:
        _loaded[module] = load_file(Path(module).resolve(), private="ttq")
    return _loaded[module]
"""

# The kernel Helion's arm tunes is the kernel as shipped: a helion.Kernel's own settings that are not about
# autotuning are kept (static_shapes=False and ignore_warnings on Helion's AOT kernels); its autotune settings,
# the AOT cache (heuristic lookup) among them, are the arm's. Re-wrapped with static_shapes=True, as the arm did
# until 2026-12-05, nine of the ten pretuned kernels generate other Triton code (no masks, constant strides)
# than the shipped kernel the re-timing builds, and scaled_mm's search space has 6 indexing slots against 8.
SHIPPED_SETTINGS = r"""
from paretotune.kernels.helion import shipped_settings as as_shipped  # the kernel as its users run it
"""

# Helion's guards against a config that hangs or faults: each config compiled in a forked child with a timeout,
# benchmarked in a spawned worker it kills and respawns (Helion's defaults). ``--helion-in-process`` turns both
# off, the setting of ttq42's calls 1-26 (2026-12-05/06), chosen when the default subprocess mode found no working
# softmax config on the H200 image (2026-11): one hanging or faulting config then ends the whole search.
IN_PROCESS = {"autotune_benchmark_subprocess": False, "autotune_precompile": None}
GUARDS = r"""
GUARDS = ("autotune_benchmark_subprocess", "autotune_benchmark_timeout", "autotune_precompile",
          "autotune_compile_timeout")
IN_PROCESS = """ + repr(IN_PROCESS) + r"""

def guard_settings(in_process):
    return IN_PROCESS if in_process else {}
"""

HELION_CHILD = r"""
import json, sys, time
process_start = time.time()  # before torch and Helion are imported: a paretotune arm's clock starts there too
spec = json.loads(sys.argv[1])
import torch, helion
""" + CHILD_LOADER + SHIPPED_SETTINGS + GUARDS + r"""

def obj(name):
    module, _, attr = name.rpartition(":")
    return getattr(load(module), attr)

def inputs(spec):
    # the same inputs as the paretotune arms: the campaign's input factory, on the GPU, seed 0
    if spec.get("inputs"):
        return tuple(obj(spec["inputs"])(spec["shape"], "cuda", 0))
    k = obj(spec["helion_spec"])  # a bundled HelionKernel spec
    return tuple(k.args(k.inputs(spec["shape"], "cuda", 0), spec["shape"]))

module, attr = spec["helion"]
fn, kept = as_shipped(getattr(load(module), attr))
args = inputs(spec)
start = time.time()
# the budget counts this process's start-up, as a paretotune arm's does
left = max(5, int(spec["budget_s"] - (start - process_start)))
kern = helion.kernel(fn, **kept, **guard_settings(spec["in_process"]), autotune_search_acf=spec["acfs"],
                     autotune_effort=spec["effort"], autotune_log=spec["log"], autotune_budget_seconds=left)
out = {"start_epoch": start, "process_epoch": process_start, "autotune_budget_s": left, "effort": spec["effort"],
       "kernel_settings": {k: repr(v) for k, v in kept.items()},
       "helion_guards": {k: getattr(kern.settings, k, None) for k in GUARDS}}
print("TTQ_RESULT " + json.dumps(out), flush=True)  # where its clock started, even if the watchdog kills it
try:
    bound = kern.bind(args)
    bound.autotune(args)
    cfg = getattr(bound, "_config", None) or getattr(bound, "config", None)
    out["winner_config"] = dict(getattr(cfg, "config", cfg) or {})
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"[:800]
out["wall_s"] = time.time() - start
print("TTQ_RESULT " + json.dumps(out, default=str))
"""


def helion_arm(work: Path, name: str, spec: dict[str, Any], budget_s: float, acfs: list[str],
               effort: str = "full", in_process: bool = False) -> dict[str, Any]:
    folder = work / name / f"helion-{effort}"
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "helion_autotune"
    payload = {"helion": spec["helion"], "name": name, "shape": spec["shape"], "acfs": acfs, "log": str(log),
               "budget_s": budget_s, "effort": effort, "inputs": spec.get("inputs"),
               "helion_spec": spec.get("helion_spec"), "in_process": in_process}
    cmd = [sys.executable, "-c", HELION_CHILD, json.dumps(payload)]
    csv_log = log.with_suffix(".csv")
    row = _child(f"helion-autotune-{effort}", cmd, budget_s,
                 progress=lambda: csv_log.stat().st_size if csv_log.exists() else 0)
    rows = helion_csv_rows(csv_log)
    # Helion's CSV times count from its autotune start; the timeline counts from the process start, as the
    # paretotune arms' do (imports, binding and inputs included)
    offset = startup_s(row)
    timeline = sorted((float(r["timestamp_s"]) + offset, float(r["perf_ms"]), i) for i, r in enumerate(rows)
                      if r.get("perf_ms") not in (None, "", "inf", "nan") and r.get("status") != "started")
    points = {i: helion_config(rows[i]["config"]) for i in improvements(timeline)}
    return {**row, "timeline": timeline, "points": points, "configs_tested": len(timeline), "acf_files": len(acfs)}


def helion_config(text: str) -> dict[str, Any]:
    """A config as Helion's autotune CSV writes it (``Config(block_sizes=[1], ...)``), split into the config and
    its ACF path. Evaluated with nothing but ``Config`` = dict in scope."""
    config = eval(text, {"__builtins__": {}, "Config": dict})  # noqa: S307 - our own benchmark's Helion CSV
    return {"config": config, "acf_path": config.pop("advanced_controls_file", None) or None}


TRITON_CHILD = r"""
import json, sys, time
process_start = time.time()
spec = json.loads(sys.argv[1])
import torch
""" + CHILD_LOADER + r"""
mod = load(spec["file"])
kernel = mod.rms_norm_kernel  # the @triton.autotune object, used unchanged
t = {k: v.cuda() for k, v in mod.rms_norm_inputs(spec["shape"]).items()}
start = time.time()
out = {"start_epoch": start, "process_epoch": process_start}
try:
    x = t["x_ptr"]
    kernel[(x.shape[0],)](x, t["w_ptr"], t["out_ptr"], x.stride(0), x.shape[1], 1e-6)
    torch.cuda.synchronize()
    out["autotune_s"] = time.time() - start
    best = kernel.best_config
    timings = {str(c): (v[0] if isinstance(v, (list, tuple)) else v) for c, v in (kernel.configs_timings or {}).items()}
    out["configs_tested"] = len(timings)
    out["winner"] = {"config": {**best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages},
                     "acf_path": None, "runtime_ms": min(timings.values()) if timings else None}
    out["timings_ms"] = timings
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"[:800]
out["wall_s"] = time.time() - start
print("TTQ_RESULT " + json.dumps(out, default=str))
"""


def triton_arm(work: Path, name: str, spec: dict[str, Any], budget_s: float) -> dict[str, Any]:
    """Triton's autotune over the kernel's own configs (it has no time budget: it tries every pruned config)."""
    file = Path(spec["kernel"]["source"].rsplit(":", 1)[0])
    if not file.is_file():
        return {"tool": "triton-autotune", "error": f"{file} not found (the own-kernels work adds it)",
                "timeline": []}
    cmd = [sys.executable, "-c", TRITON_CHILD, json.dumps({"file": str(file), "shape": spec["shape"]})]
    row = _child("triton-autotune", cmd, budget_s)
    done = row.get("autotune_s")
    if done is not None:  # from the process start, as the other arms' timelines
        done += startup_s(row)
    winner = row.pop("winner", None) or {}
    best = winner.get("runtime_ms")
    found = done is not None and best is not None
    return {**row, "timeline": [(done, best, 0)] if found else [],
            "points": {0: {"config": winner["config"], "acf_path": None}} if found else {}}


def _child(tool: str, cmd: list[str], budget_s: float, progress: Any = None) -> dict[str, Any]:
    """A peer tool's arm in a child under the watchdog (``common.run_with_watchdog``): killed at its budget plus
    a short grace, and recorded as hung or overrun instead of the benchmark waiting on it."""
    outcome = run_with_watchdog(cmd, budget_s, env=child_env(), progress=progress)
    row = outcome.as_row()
    if not outcome.result and outcome.outcome == "finished":
        row["error"] = "no result"
    return {"tool": tool, "command": " ".join(cmd[:2] + ["<script>", "<args>"]), **row}


# -- re-timing the winners side by side --------------------------------------------------------------------
def retime(work: Path, name: str, spec: dict[str, Any], arms: list[dict[str, Any]], budgets: list[float],
           rounds: int) -> dict[str, Any]:
    """The kernel each arm had reached by each budget, and the same config without its ACF (the twin), in one
    fresh process on the same buffers (paretotune's validation worker); fills each arm's ``best_by``."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from paretotune.validate.worker import CONTROL_ID, validate_in_process
    from paretotune.pareto.stats import compare, validate_front
    from paretotune.toolchain.ptxas import find_ptxas

    entries: list[dict[str, Any]] = []  # distinct (config, ACF) pairs: one re-timed candidate each
    index: dict[str, int] = {}

    def add(config: dict[str, Any], acf: str | None) -> int:
        key = json.dumps([config, acf], sort_keys=True, default=str)
        if key not in index:
            index[key] = len(entries)
            entries.append({"candidate_id": len(entries), "config": config, "acf_path": acf})
        return index[key]

    for arm in arms:
        arm["best_by"] = {}
        arm["budgets"] = [f"{b:g}" for b in budgets]  # re-timed by these (no best_by entry: nothing reached)
        for budget in budgets:
            key = best_key_by(arm.get("timeline", []), budget)
            if key is None:
                continue  # nothing by then: the tool's user still has the default
            point = arm["points"][key] if key in arm["points"] else arm["points"][str(key)]  # (JSON: str keys)
            arm["best_by"][f"{budget:g}"] = {
                "search_ms": best_by(arm["timeline"], budget), "id": add(point["config"], point["acf_path"]),
                "is_baseline": point.get("is_baseline", False),  # the tool found nothing faster than its start
                "search_speedup": point.get("search_speedup"),  # paretotune's paired figure; Helion has none
                "twin_id": add(point["config"], None) if point["acf_path"] else None}
    if not entries:
        return {"error": "no arm reached a kernel by any budget"}
    cfg = work / name / "retime.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)  # a re-timing job of its own has no arm folder here
    cfg.write_text(campaign_text(name, spec, "joint", 60, 1))
    ptxas = find_ptxas()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        measured = pool.submit(validate_in_process, str(cfg), cfg.read_text(), str(ptxas.path), ptxas.version,
                               entries, rounds, 10.0, 40.0, 0).result(timeout=900)
    data = next(iter(measured.values()))
    samples = data["samples"]
    table = validate_front(samples["baseline"], {int(k): v for k, v in samples.items() if k != "baseline"},
                           direction="min")
    timed: dict[int, dict[str, Any]] = {}
    for _, row in table.iterrows():
        timed[int(row["candidate_id"])] = {
            "median_ms": _median(samples[str(int(row["candidate_id"]))]), "speedup": float(row["speedup"]),
            "host_ms": (data.get("host_ms") or {}).get(str(int(row["candidate_id"]))),
            "p_holm": float(row["p_holm"]), "significant": bool(row["significant"]),
            "ci": [float(row["ci_low"]), float(row["ci_high"])]}
    ceiling = data.get("ceiling") or {}
    for figures in timed.values():  # achieved bandwidth, and its fraction of a copy of the same bytes
        figures.update(bandwidth(ceiling, figures["median_ms"]))
    for arm in arms:
        for reached in arm["best_by"].values():
            reached["retimed"] = timed.get(reached["id"])
            point_search = reached.get("search_speedup") or (
                _median(samples["baseline"]) / reached["search_ms"] if reached.get("search_ms") else None)
            if reached["retimed"] and point_search:  # does the search's own figure hold when re-timed?
                reached["search_speedup"] = point_search
                reached["search_vs_retime_pct"] = 100 * (point_search / reached["retimed"]["speedup"] - 1)
            twin = timed.get(reached["twin_id"]) if reached["twin_id"] is not None else None
            reached["twin"] = twin
            if reached["retimed"]:
                reached["gate"] = own_gate(samples, reached["id"], reached["twin_id"])
            if reached["retimed"] and twin:  # the gain splits: total = config's share (the twin's) x the ACF's,
                # the ACF's judged as `validate` judges it (candidate against twin), so the two multiply to the total
                share = compare(samples[str(reached["twin_id"])], samples[str(reached["id"])], direction="min")
                reached["acf_share"] = share.speedup
    return {"errors": {str(k): v for k, v in data["errors"].items()},
            "baseline_median_ms": _median(samples["baseline"]),
            "timing": data.get("timing"), "timing_source": data.get("timing_source"),
            "gpu_work": data.get("gpu_work") or [],  # one call's GPU activities (the first CUPTI look)
            "baseline_host_ms": (data.get("host_ms") or {}).get("baseline"), "ceiling": ceiling,
            "baseline_bandwidth": bandwidth(ceiling, _median(samples["baseline"])),
            "control": timed.get(CONTROL_ID), "candidates": [{**e, **(timed.get(e["candidate_id"]) or {})}
                                                             for e in entries],
            "samples": samples}  # ms per round and arm: a verdict can be judged again from the data


def own_gate(samples: dict[str, list[float]], pick: int, twin: int | None) -> dict[str, Any]:
    """The verdict ``paretotune validate`` gives a run whose front is this pick: Holm over the pick and its no-ACF
    twin alone, from the same samples. The re-timing's own table adjusts over every tool's picks timed beside it,
    a family up to six times larger that no user's validation has (it made the gate stricter for paretotune
    alone: only its score is gated)."""
    from paretotune.pareto.stats import validate_front

    family = {pick: samples[str(pick)], **({twin: samples[str(twin)]} if twin is not None else {})}
    row = validate_front(samples["baseline"], family, direction="min").iloc[0]
    return {"p_holm": float(row["p_holm"]), "significant": bool(row["significant"]), "family": len(family)}


def verdict(reached: dict[str, Any]) -> dict[str, Any]:
    """The verdict paretotune's validation gives this pick: its own gate (:func:`own_gate`) where the re-timing
    judged one, else the re-timing's own (records from before the gate); {} where not re-timed."""
    return reached.get("gate") or reached.get("retimed") or {}


def gated(reached: dict[str, Any]) -> bool | None:
    """Whether paretotune's validation would ship this pick (:func:`verdict`); None where not re-timed."""
    return verdict(reached).get("significant")


def unshipped(reached: dict[str, Any]) -> str:
    """Why paretotune would not ship a re-timed pick, for ttq.md: '' where its gate passes; a pick the gate finds
    significantly *slower* than the baseline is said so (Holm's p under validation's alpha, the speedup under 1),
    not left as "not significant"."""
    from paretotune.pareto.stats import Thresholds

    if gated(reached):
        return ""
    p = verdict(reached).get("p_holm")
    slower = p is not None and p < Thresholds().alpha and reached["retimed"]["speedup"] < 1
    return " (significantly slower: not shipped)" if slower else " (not significant)"


def score(tool: str, reached: dict[str, Any] | None) -> float | None:
    """What the tool's user has by a budget, as its re-timed speedup over the baseline: a tool that reached nothing
    or nothing faster than its start leaves the baseline (1.0, "no headroom, baseline kept"); paretotune ships only a
    winner its re-timing finds significantly faster (validation's gate), else the baseline stays; any other tool
    ships the fastest config it measured, so a regression scores below 1.0. None: reached but not re-timed."""
    if not reached or reached.get("is_baseline"):
        return 1.0
    timed = reached.get("retimed")
    if not timed:
        return None
    if tool.startswith("paretotune"):
        return timed["speedup"] if gated(reached) and timed["speedup"] > 1 else 1.0
    return timed["speedup"]


SCORE_TARGETS = {"60": 8, "120": 8}  # kernels (of ten) where paretotune's score is at least Helion's, per budget;
LONG_RUN_KERNELS = 2  # at any other budget (300 s): every kernel run there, and at least this many
CEILING_TARGET = ("pretuned_rms_norm", "60", 0.97)  # within 3 % of the copy ceiling by 60 s


def summary(result: dict[str, Any], budgets: list[float]) -> dict[str, Any]:
    """Per budget: on how many kernels paretotune's score (``paretotune-default``) is at least Helion's, against
    issue 42's targets (8 of 10 at 60 and 120 s; at 300 s every kernel run there, two at least), and the rms_norm
    ceiling target."""
    out: dict[str, Any] = {}
    for budget in (f"{b:g}" for b in budgets):
        pairs = {}
        for kname, k in result["kernels"].items():
            by_tool = {a["tool"]: score(a["tool"], a.get("best_by", {}).get(budget)) for a in k.get("arms", [])
                       if budget in a.get("budgets", ())}  # an arm that reached nothing by then scores 1.0
            ours = by_tool.get("paretotune-default")
            theirs = next((v for t, v in by_tool.items() if t.startswith("helion-autotune")), None)
            if ours is not None and theirs is not None:
                pairs[kname] = {"paretotune": ours, "helion": theirs}
        ahead = sorted(k for k, p in pairs.items() if p["paretotune"] >= p["helion"])
        need = SCORE_TARGETS.get(budget) or max(LONG_RUN_KERNELS, len(pairs))
        out[budget] = {"kernels": len(pairs), "paretotune_at_least_helion": len(ahead), "need": need,
                       "met": bool(pairs) and len(pairs) >= need and len(ahead) >= need, "scores": pairs}
    kname, budget, fraction = CEILING_TARGET
    reached = next((a.get("best_by", {}).get(budget) for a in result["kernels"].get(kname, {}).get("arms", [])
                    if a["tool"] == "paretotune-default"), None)
    of_copy = ((reached or {}).get("retimed") or {}).get("of_copy")
    out["ceiling"] = {"kernel": kname, "budget_s": budget, "of_copy": of_copy, "need": fraction,
                      "met": of_copy is not None and of_copy >= fraction}
    return out


def winners(arms: list[dict[str, Any]], budgets: list[float]) -> dict[str, str]:
    """Per budget: the tool whose kernel by then re-timed fastest, significantly faster than the default; a
    tie where its interval overlaps the next tool's; 'none' when no tool's kernel beat the default. "Significantly"
    as the score judges it: paretotune's pick by its own validation's gate (:func:`gated`), another tool's by the
    re-timing's verdict."""
    def faster(tool: str, reached: dict[str, Any]) -> bool:
        judged = gated(reached) if tool.startswith("paretotune") else reached["retimed"]["significant"]
        return bool(judged) and reached["retimed"]["speedup"] > 1

    out = {}
    for budget in budgets:
        ranked = sorted(((r["retimed"], arm["tool"]) for arm in arms
                         if (r := arm.get("best_by", {}).get(f"{budget:g}")) and r.get("retimed")
                         and faster(arm["tool"], r)),
                        key=lambda t: -t[0]["speedup"])
        if not ranked:
            out[f"{budget:g}"] = "none: no tool's kernel was significantly faster than the default"
            continue
        (top, tool), rest = ranked[0], ranked[1:]
        tie = [t for r, t in rest if r["ci"][1] >= top["ci"][0]]
        out[f"{budget:g}"] = f"{tool} ({top['speedup']:.3f}x)" + (f", within the interval of {', '.join(tie)}"
                                                                  if tie else "")
    return out


def _median(values: list[float]) -> float:
    import statistics

    return statistics.median(values)


# -- report ------------------------------------------------------------------------------------------------
def best_by(timeline: list[Any], seconds: float) -> float | None:
    reached = [t[1] for t in timeline if t[0] <= seconds]
    return min(reached) if reached else None


def best_key_by(timeline: list[Any], seconds: float) -> Any:
    """The id of the fastest point reached by ``seconds`` (the first of equals), or None."""
    reached = [t for t in timeline if t[0] <= seconds]
    return min(reached, key=lambda t: (t[1], t[0]))[2] if reached else None


def write_table(out: Path, result: dict[str, Any], budgets: list[float]) -> list[dict[str, Any]]:
    rows = []
    for kname, k in result["kernels"].items():
        if k.get("error"):  # skipped, or failed outside any one arm
            rows.append({"kernel": kname, "tool": "-", "error": k["error"][:300]})
        ceiling = (k.get("retime") or {}).get("ceiling") or {}
        for arm in k.get("arms", []):
            row = {"kernel": kname, "tool": arm["tool"], "gpu": arm.get("gpu"), "error": arm.get("error", ""),
                   "tensor_bytes": ceiling.get("bytes"), "copy_ceiling_ms": ceiling.get("copy_ms"),
                   "copy_ceiling_gbps": ceiling.get("copy_gbps"),
                   "candidates": arm.get("candidates", arm.get("configs_tested")),
                   "gpu_busy_fraction": arm.get("gpu_busy_fraction"),
                   "gpu_build_s_per_candidate": arm.get("gpu_build_s_per_candidate"),
                   "max_candidate_gpu_s": arm.get("max_candidate_gpu_s"), "hung_candidates": arm.get("hung_candidates"),
                   "watchdog": arm.get("watchdog")}
            for b in budgets:
                reached = arm.get("best_by", {}).get(f"{b:g}") or {}
                timed = reached.get("retimed") or {}
                row[f"best_ms_by_{b:g}s"] = best_by(arm.get("timeline", []), b)
                row[f"retimed_speedup_by_{b:g}s"] = timed.get("speedup")
                row[f"significant_by_{b:g}s"] = gated(reached)
                row[f"acf_share_by_{b:g}s"] = reached.get("acf_share")
                row[f"search_vs_retime_pct_by_{b:g}s"] = reached.get("search_vs_retime_pct")
                row[f"host_ms_by_{b:g}s"] = timed.get("host_ms")
                row[f"score_by_{b:g}s"] = score(arm["tool"], reached) if f"{b:g}" in arm.get("budgets", ()) else None
                row[f"gbps_by_{b:g}s"] = timed.get("gbps")
                row[f"of_copy_ceiling_by_{b:g}s"] = timed.get("of_copy")
            rows.append(row)
    if rows:
        with open(out / "ttq.csv", "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(max(rows, key=len)))
            writer.writeheader()
            writer.writerows(rows)
    return rows


def write_markdown(out: Path, result: dict[str, Any], budgets: list[float]) -> str:
    """OUT/ttq.md, the README's table: per kernel each tool's score by each budget (what its user ships, re-timed;
    '-' where the tool was not run that long), and paretotune's pick by the longest budget the kernel was run for
    split into its config's and its ACF's share, with its bandwidth as a fraction of the copy ceiling."""
    heads = [f"{tool} by {b:g} s" for tool in ("paretotune", "Helion") for b in budgets]
    pick = "paretotune's longest-budget pick: config x ACF; of the copy ceiling"
    lines = ["| kernel | GPU | " + " | ".join(heads) + f" | {pick} | notes |",
             "|---" * (len(heads) + 4) + "|"]
    for kname, k in result["kernels"].items():
        arms = {("paretotune" if a["tool"] == "paretotune-default" else "Helion"): a for a in k.get("arms", [])
                if a["tool"] == "paretotune-default" or a["tool"].startswith("helion-autotune")}
        cells, notes = [], [k["error"][:80]] if k.get("error") else []
        for tool in ("paretotune", "Helion"):
            arm = arms.get(tool, {})
            for b in (f"{b:g}" for b in budgets):
                value = score(arm["tool"], arm.get("best_by", {}).get(b)) if b in arm.get("budgets", ()) else None
                cells.append("-" if value is None else f"{value:.3f}x")
            if arm.get("error"):  # when it ended: what it had ranked best by then is what the table re-timed
                after = f" after {arm['process_wall_s']:.0f} s" if arm.get("process_wall_s") else ""
                notes.append(f"{tool}{after}: {arm['error'][:70]}")
            guards = arm.get("helion_guards")  # a table of Helion as shipped must not take an in-process row
            if guards and all(guards.get(k) == v for k, v in IN_PROCESS.items()):
                notes.append(f"{tool} in process (its guards off)")
        ours = arms.get("paretotune", {})  # its pick by the longest budget this kernel was run for
        last = (ours.get("best_by") or {}).get(max(ours.get("budgets") or ["0"], key=float)) or {}
        twin, timed = last.get("twin") or {}, last.get("retimed") or {}
        split = ("baseline kept" if last.get("is_baseline") else
                 f"{twin['speedup']:.3f}x x {last['acf_share']:.3f}x" if twin and last.get("acf_share")
                 else f"{timed['speedup']:.3f}x x 1 (no ACF)" if timed else "-")
        split += unshipped(last) if timed and not last.get("is_baseline") else ""
        of_copy = f"; {timed['of_copy']:.2f}" if timed.get("of_copy") is not None else ""
        lines.append(f"| {kname.removeprefix('pretuned_')} | {kernel_gpus(k) or '-'} | " + " | ".join(cells)
                     + f" | {split}{of_copy} | "
                     + "; ".join(notes).replace("|", "/").replace("\n", " ") + " |")
    text = "\n".join(lines) + "\n"
    (out / "ttq.md").write_text(text)
    return text


def kernel_gpus(entry: dict[str, Any]) -> str:
    """The GPU models a kernel's arms ran on, short (``H200``): the table's GPU column and the plot's titles."""
    return ", ".join(sorted({a["gpu"].removeprefix("NVIDIA ") for a in entry.get("arms", []) if a.get("gpu")}))


PLOT_COLUMNS = 4  # kernels per row of ttq.png (ten kernels: three rows)
PLOT_TOP = 1.7  # a panel's y axis ends at this many times the heuristic's config's time, if its points reach higher


def plot(out: Path, result: dict[str, Any]) -> Path | None:
    """OUT/ttq.png: per kernel, the best GPU time each tool had reached by each wall second, by its own search
    clock (the table's scores are the re-timed ones), to where the arm ended; an arm that crashed, hung or overran
    its budget ends in a cross, named so. paretotune's reading of the heuristic's config, by the same clock, is the
    dashed line."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    names = list(result["kernels"])
    if not names:
        return None
    cols = min(PLOT_COLUMNS, len(names))
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.4 * rows), squeeze=False)
    for ax, kname in zip(axes.flat, names):
        plot_kernel(ax, kname, result["kernels"][kname])
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    fig.tight_layout()
    path = out / "ttq.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_kernel(ax: Any, kname: str, entry: dict[str, Any]) -> None:
    """One kernel's panel of :func:`plot`. An arm whose best stays above the panel's top (:data:`PLOT_TOP`) is
    named in the panel with its best, so a curve cut off is not read as a curve missing."""
    finals: list[tuple[str, float, Any]] = []  # tool, its best in µs, its line's colour
    for arm in entry.get("arms", []):
        tl = arm.get("timeline", [])
        if not tl:
            continue
        xs, ys, best = [], [], float("inf")
        for t, v, _ in sorted(tl):
            best = min(best, v * 1e3)
            xs.append(t)
            ys.append(best)
        end = arm.get("process_wall_s") or arm.get("wall_s") or xs[-1]
        line = ax.step([*xs, max(end, xs[-1])], [*ys, ys[-1]], where="post", label=arm["tool"])[0]
        finals.append((arm["tool"], ys[-1], line.get_color()))
        if arm.get("error"):
            word = str(arm["error"]).split(":", 1)[0]  # the watchdog's "hung" or "overran", else the tool's error
            ending = word if word in ("hung", "overran") else "crashed"
            ax.plot([max(end, xs[-1])], [ys[-1]], "x", color=line.get_color(), markersize=9,
                    label=f"{arm['tool']} {ending}")
        if arm.get("baseline_ms"):
            ax.axhline(arm["baseline_ms"] * 1e3, color="gray", linestyle="--", linewidth=0.8,
                       label="heuristic's config")
    baselines = [a["baseline_ms"] * 1e3 for a in entry.get("arms", []) if a.get("baseline_ms")]
    if baselines:  # once every arm is drawn: a far slower first try would flatten the rest
        ax.set_ylim(top=min(ax.get_ylim()[1], max(baselines) * PLOT_TOP))
        above = [(tool, best, colour) for tool, best, colour in finals if best > ax.get_ylim()[1]]
        for i, (tool, best, colour) in enumerate(above):
            ax.text(0.02, 0.97 - 0.08 * i, f"{tool}: best {best:,.0f} µs, above the panel", transform=ax.transAxes,
                    fontsize=6, va="top", color=colour)
    title, gpus = kname.removeprefix("pretuned_"), kernel_gpus(entry)
    ax.set_title(f"{title} ({gpus})" if gpus else title, fontsize=10)
    ax.set_xlabel("wall seconds from the tool's process start")
    ax.set_ylabel("best GPU time reached (µs)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6)


# -- main --------------------------------------------------------------------------------------------------
def versions() -> dict[str, str]:
    import importlib.metadata

    out = {"python": platform.python_version()}
    for dist in ("torch", "triton", "helion", "compileiq", "paretotune"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--kernels", default=",".join(DEFAULT_KERNELS),
                        help=f"comma list, 'all' or '{PRETUNED_ALL}' ({', '.join(kernels())})")
    parser.add_argument("--budgets", default="30,60",
                        help="wall seconds from each tool's process start; each tool runs once, for the largest")
    parser.add_argument("--max-s", type=float, default=570.0,
                        help="skip a kernel (recorded as skipped) that would end past this many seconds")
    parser.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES),
                        help=f"paretotune arms, comma list of {', '.join(STRATEGIES)} (default: paretotune's default)")
    parser.add_argument("--helion-effort", default="full",
                        help="Helion arms' autotune_effort, comma list of quick/full (one Helion arm each)")
    parser.add_argument("--helion-acfs", type=acf_choice, default="compileiq",
                        help=f"Helion's ACF list: {HELION_ACFS} CompileIQ samples drawn now ('compileiq'), "
                             "benchmarks/inputs/ttq_acfs ('shipped'), or the .acf files of a folder")
    parser.add_argument("--helion-in-process", action="store_true",
                        help="Helion's arm without its guards (no forked compiles, no benchmark worker): a config "
                             "that hangs or faults ends its search; the setting of ttq42's calls 1-26")
    parser.add_argument("--gpus", type=gpu_list, default=None,
                        help="spread the kernels over GPUs of this host: a count N (GPUs 0..N-1) or a comma list of "
                             "indices; one job per GPU at a time, each on that GPU's share of the host's cores; "
                             "OUT/parts/<job>/, then every part merged into OUT/ttq.json")
    parser.add_argument("--split-arms", action="store_true",
                        help="with --gpus: a kernel's paretotune arms and its other tool's arm on two GPUs side by "
                             "side, then its re-timing on one (a 300 s budget's kernel in one call)")
    parser.add_argument("--redo-other-gpu", metavar="WHY", default=None, type=folder_name,
                        help="with --gpus: a kernel whose parts ran on another GPU model runs all its jobs here, its "
                             "parts moved to OUT/superseded/WHY/ first (without it such a kernel is left out)")
    parser.add_argument("--merge", action="store_true",
                        help="no runs: merge OUT/parts/ into OUT/ttq.json, write the table and the plot")
    parser.add_argument("--arms-from", default="",
                        help="comma list of earlier OUT folders whose arms join this one's before it runs")
    parser.add_argument("--workers", type=int, default=8, help="paretotune's CPU build workers")
    parser.add_argument("--rounds", type=int, default=15, help="re-timing rounds of the winners")
    parser.add_argument("--smoke", action="store_true", help="1 kernel, joint + Helion, one 45 s budget")
    parser.add_argument("--retime", choices=("auto", "skip", "only"), default="auto",
                        help="auto: re-time each kernel's winners after its arms; skip: arms only; only: no arms, "
                             "re-time what OUT/ttq.json holds (a long budget's arms in separate calls, then this)")
    parser.add_argument("--check", action="store_true",
                        help="no GPU: write each paretotune arm's campaign, load it, resolve the kernel (its space, "
                             "baseline, which engine runs), draw the ACF list, print the plan; then stop")
    args = parser.parse_args()
    if args.redo_other_gpu and args.gpus is None:
        parser.error("--redo-other-gpu: only with --gpus (the fan-out decides where a kernel's jobs run)")
    if args.merge:
        result = merge_parts(args.out)
        report(args.out, result, result["budgets_s"])
        return
    packed(args.out)
    known = kernels()
    names = {"all": list(known), PRETUNED_ALL: [f"pretuned_{k}" for k in PRETUNED_TEN]}.get(
        args.kernels, args.kernels.split(","))
    budgets = sorted(float(b) for b in args.budgets.split(","))
    strategies = [] if args.strategies in ("", "none") or args.retime == "only" else args.strategies.split(",")
    efforts = [] if args.helion_effort in ("", "none") or args.retime == "only" else args.helion_effort.split(",")
    if args.smoke:
        names, budgets, strategies, args.rounds = ["helion_softmax"], [45.0], ["default"], 5
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"--kernels: unknown {unknown} (known: {', '.join(known)}, {PRETUNED_ALL})")
    odd = [s for s in strategies if s not in STRATEGIES] + [e for e in efforts if e not in ("quick", "full")]
    if odd:
        raise SystemExit(f"--strategies/--helion-effort: unknown {odd}")
    longest = budgets[-1]

    def kernel_estimate(kname: str) -> float:
        if args.retime == "only":
            return RETIME_S
        other = len(efforts) * (longest + AFTER_BUDGET_S) if known[kname]["other"] == "helion" else TRITON_ARM_S
        return len(strategies) * (longest + AFTER_BUDGET_S) + other + (RETIME_S if args.retime == "auto" else 0)

    estimate = sum(kernel_estimate(k) for k in names if k in known)
    print(f"plan: {len(names)} kernel(s) {names}, tools {['paretotune-' + s for s in strategies]} + Helion/Triton, "
          f"one run each of {longest:g} s (budgets {budgets} read off it), winners re-timed "
          f"({args.rounds} rounds); estimate {estimate / 60:.1f} min", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    helion_arms = bool(efforts) and any(known[k]["other"] == "helion" for k in names)
    acfs = [] if not (helion_arms or args.check) else helion_acf_list(args.out, args.helion_acfs)
    if args.check:
        check(args.out, names, known, strategies, longest, args.workers, acfs)
    if args.gpus is not None:
        other_s = len(efforts) * (longest + AFTER_BUDGET_S)  # a Triton kernel's: TRITON_ARM_S (the larger)
        arms = [len(strategies) * (longest + AFTER_BUDGET_S), max(other_s, TRITON_ARM_S)]
        fan_out(args, names, [kernel_estimate(k) for k in names], arms, acfs)
        return
    if args.check:
        return
    import torch

    earlier = args.out / "ttq.json"  # a split run (--retime skip / only) adds to what earlier calls wrote
    previous = json.loads(earlier.read_text()) if earlier.exists() else None
    result: dict[str, Any] = {
        "command": " ".join([sys.executable, *sys.argv]), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None, "versions": versions(),
        "machine": {"cpu": cpu_model(), "topology": cpu_topology(), "load_average_1_5_15_min": load_average()},
        "budgets_s": budgets, "acf_list": [Path(a).name for a in acfs], "helion_acfs": args.helion_acfs,
        "helion_efforts": efforts, "strategies": strategies, "kernels": {}}
    if previous is not None:
        result["calls"] = [*previous.get("calls", [{k: previous.get(k) for k in ("command", "date", "versions")}]),
                           {k: result[k] for k in ("command", "date", "versions")}]
        result["kernels"] = previous.get("kernels", {})
    for folder in filter(None, args.arms_from.split(",")):  # arms run on other GPUs, re-timed here
        fold_arms(result, json.loads((Path(folder) / "ttq.json").read_text()))
    began = time.time()
    for kname in names:
        spec = known[kname]
        entry: dict[str, Any] = result["kernels"].get(kname) or {"shape": spec["shape"], "arms": []}
        entry.pop("error", None)
        result["kernels"][kname] = entry

        def add(arm: dict[str, Any]) -> None:  # an arm run again in a later call replaces the earlier one
            arm.update(cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"), gpu=result["gpu"])  # which GPU
            put_arm(entry, arm)

        if time.time() - began + kernel_estimate(kname) > args.max_s:
            entry["error"] = (f"skipped: would end past --max-s {args.max_s:g} s "
                              f"(estimate {kernel_estimate(kname):.0f} s); run it with --kernels {kname}")
            _save(args.out, result, budgets)
            continue
        try:
            for strategy in strategies:
                try:
                    add(paretotune_arm(args.out, kname, spec, strategy, longest, args.workers))
                except Exception as exc:  # noqa: BLE001 - one arm's failure is a row of the table
                    add({"tool": f"paretotune-{strategy}", "error": repr(exc)[:500]})
                _save(args.out, result, budgets)
            if spec["other"] == "helion":
                for effort in efforts:
                    add({**helion_arm(args.out, kname, spec, longest, acfs, effort, args.helion_in_process),
                         "acf_list": [Path(a).name for a in acfs]})
                    _save(args.out, result, budgets)
            elif not args.smoke and args.retime != "only":
                add(triton_arm(args.out, kname, spec, longest))
            _save(args.out, result, budgets)
            if args.retime != "skip":
                same_gpu(entry["arms"], result["gpu"])
                entry["retime"] = retime(args.out, kname, spec, entry["arms"], budgets, args.rounds)
                entry["retime"]["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
                entry["winner_by"] = winners(entry["arms"], budgets)
        except Exception as exc:  # noqa: BLE001 - the next kernel still runs
            entry["error"] = f"{type(exc).__name__}: {exc}"
            entry["traceback"] = traceback.format_exc(limit=6)
        _save(args.out, result, budgets)
    report(args.out, result, budgets)


def same_gpu(arms: list[dict[str, Any]], gpu: str | None) -> None:
    """Refuse to re-time picks a search made on another GPU model: the re-timing would rank them on a machine
    neither search ran on (:func:`elsewhere` keeps the fan-out from planning it)."""
    other = sorted({a["gpu"] for a in arms if a.get("gpu") and a["gpu"] != gpu})
    if other:
        raise RuntimeError(f"the arms ran on {', '.join(other)} and this GPU is {gpu}: re-time them on theirs")


def report(out: Path, result: dict[str, Any], budgets: list[float]) -> None:
    """Write the table, the plot and the summary; print them."""
    rows = _save(out, result, budgets)
    plot(out, result)
    write_markdown(out, result, budgets)
    cols = ["kernel", "tool", *[c for b in budgets for c in (f"best_ms_by_{b:g}s", f"retimed_speedup_by_{b:g}s")],
            "gpu_busy_fraction", "error"]
    print("\t".join(cols))
    for row in rows:
        print("\t".join("" if row.get(c) is None else (f"{row[c]:.4f}" if isinstance(row[c], float) else
                                                      str(row[c])[:60]) for c in cols))
    for kname, k in result["kernels"].items():
        print(f"{kname}: fastest validated kernel by budget: {k.get('winner_by')}")
    for budget, s in result["summary"].items():
        if budget != "ceiling":
            print(f"by {budget} s: paretotune's score >= Helion's on {s['paretotune_at_least_helion']} of "
                  f"{s['kernels']} kernels (needs {s['need']}): {'met' if s['met'] else 'not met'}")
    c = result["summary"]["ceiling"]
    print(f"{c['kernel']} by {c['budget_s']} s: {c['of_copy']} of the copy ceiling (needs {c['need']}): "
          f"{'met' if c['met'] else 'not met'}")
    print(f"\nwritten: {out / 'ttq.json'}, {out / 'ttq.csv'}, {out / 'ttq.png'}")


def gpu_list(value: str) -> list[int]:
    """``--gpus``: ``N`` (GPUs 0..N-1) or a comma list of GPU indices."""
    try:
        gpus = list(range(int(value))) if "," not in value else [int(v) for v in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: not a count or a comma list of GPU indices") from None
    if not gpus or min(gpus) < 0 or len(set(gpus)) != len(gpus):
        raise argparse.ArgumentTypeError(f"{value!r}: no GPU, a negative index or one named twice")
    return gpus


def folder_name(value: str) -> str:
    """``--redo-other-gpu``: one folder's name under OUT/superseded/ (no path)."""
    if not value or value.startswith(".") or not all(c.isalnum() or c in "_.-" for c in value):
        raise argparse.ArgumentTypeError(f"{value!r}: not a folder name (letters, digits, '_', '.', '-')")
    return value


def acf_choice(value: str) -> str:
    """``--helion-acfs``: compileiq, shipped, or a folder that holds .acf files."""
    if value in ("compileiq", "shipped") or any(Path(value).glob("*.acf")):
        return value
    raise argparse.ArgumentTypeError(f"{value!r}: not compileiq, shipped or a folder with .acf files")


def helion_acf_list(out: Path, choice: str) -> list[str]:
    """Helion's ACF list as ``--helion-acfs`` names it (``compileiq``: the list an earlier command drew into OUT,
    else drawn now into a folder of OUT: one list for every kernel of a table recorded over several calls)."""
    if choice == "compileiq":
        drawn = sorted((p for p in out.glob("helion_acfs_*") if len(list(p.glob("*.acf"))) == HELION_ACFS),
                       key=lambda p: p.stat().st_mtime)
        if drawn:
            return sorted(str(p) for p in drawn[-1].glob("*.acf"))
        return compileiq_acfs(out / f"helion_acfs_{time.strftime('%H%M%S')}", HELION_ACFS)
    return sorted(str(p) for p in (ACF_DIR if choice == "shipped" else Path(choice)).glob("*.acf"))


# -- several GPUs of one host -------------------------------------------------------------------------------
PARTS = "parts"  # OUT/parts/<job>/: one child's OUT


def fanout_jobs(args: argparse.Namespace, names: list[str], estimates: list[float], arm_estimates: list[float],
                acf_arg: str) -> list[GpuJob]:
    """One job per kernel (its arms, then its re-timing, as on one GPU), or with ``--split-arms`` three: the
    paretotune arms and the other tool's arm side by side, then the re-timing of both in a third (with
    ``--retime only``, that one alone; with ``--retime skip``, the two arm jobs).
    ``estimates``: seconds per kernel's whole job; ``arm_estimates``: its paretotune arms', its other tool's."""
    parts = args.out / PARTS
    base = [sys.executable, str(Path(__file__).resolve()), "--budgets", args.budgets, "--workers", str(args.workers),
            "--rounds", str(args.rounds), "--max-s", "1e9", "--helion-acfs", acf_arg, "--kernels"]
    # Helion's setting goes to its arm alone: the paretotune arms' commands, and so what earlier calls ran, stay
    helion = ["--helion-effort", args.helion_effort, *(["--helion-in-process"] if args.helion_in_process else [])]
    jobs = []
    for name, estimate in zip(names, estimates):
        if not args.split_arms:
            jobs.append(GpuJob(name, [*base, name, "--strategies", args.strategies, *helion, "--retime",
                                      args.retime, "--out", str(parts / name)],
                               parts / f"{name}.log", estimate))
            continue
        ours, other = f"{name}.paretotune", f"{name}.other"
        arms = () if args.retime == "only" else (ours, other)  # only: re-time the arms an earlier call ran
        if arms:
            jobs += [GpuJob(ours, [*base, name, "--strategies", args.strategies, "--helion-effort", "none",
                                   "--retime", "skip", "--out", str(parts / ours)], parts / f"{ours}.log",
                            arm_estimates[0]),
                     GpuJob(other, [*base, name, "--strategies", "none", *helion,
                                    "--retime", "skip", "--out", str(parts / other)], parts / f"{other}.log",
                            arm_estimates[1])]
        if args.retime != "skip":
            jobs.append(GpuJob(name, [*base, name, "--retime", "only", "--out", str(parts / name), "--arms-from",
                                      f"{parts / ours},{parts / other}"], parts / f"{name}.log", RETIME_S,
                               after=arms))
    return jobs


def done_before(out: Path, jobs: list[GpuJob]) -> tuple[list[GpuJob], list[str]]:
    """Leave out the jobs an earlier command on OUT ran to exit code 0 with the same arguments (OUT/fanout.jsonl)
    whose part is still there: a table recorded over several calls picks up where the last call stopped, with the
    same command. Their dependants no longer wait for them. To run a job again, delete its part folder."""
    log, done = out / "fanout.jsonl", set()
    for line in log.read_text().splitlines() if log.exists() else []:
        for job in json.loads(line).get("jobs", []):
            if job.get("returncode") == 0 and "error" not in job and "skipped" not in job:
                done.add(json.dumps(job["cmd"][2:]))  # past the interpreter and the script's path

    def ran(job: GpuJob) -> bool:
        part = Path(job.cmd[job.cmd.index("--out") + 1])
        return json.dumps(job.cmd[2:]) in done and (part / "ttq.json").exists()

    keep = [j for j in jobs if not ran(j)]
    names = {j.name for j in keep}
    for job in keep:
        job.after = tuple(a for a in job.after if a in names)
    return keep, [j.name for j in jobs if j not in keep]


def parts_gpus(out: Path) -> dict[str, set[str]]:
    """Per kernel, the GPU models its parts under OUT/parts/ were recorded on (its arms' and its re-timing's; a
    part's folder is the kernel's name, with ``.paretotune`` or ``.other`` for an arm)."""
    gpus: dict[str, set[str]] = {}
    for path in (out / PARTS).glob("*/ttq.json"):
        gpu = json.loads(path.read_text()).get("gpu")
        gpus.setdefault(part_kernel(path.parent.name), set()).update([gpu] if gpu else [])
    return gpus


def part_kernel(name: str) -> str:
    """The kernel a part's folder, log or job belongs to (``k``, ``k.paretotune``, ``k.other.log``: ``k``)."""
    return name.split(".")[0]


def foreign_models(out: Path, models: set[str]) -> dict[str, set[str]]:
    """Per kernel, the GPU models its parts under OUT/parts/ ran on that are not among ``models`` (this host's
    slots'); none where ``models`` is empty (no GPU named: nothing to compare)."""
    if not models:
        return {}
    return {kernel: other for kernel, gpus in parts_gpus(out).items() if (other := gpus - models)}


def elsewhere(out: Path, jobs: list[GpuJob], models: set[str]) -> tuple[list[GpuJob], dict[str, str]]:
    """Leave out every job of a kernel whose parts were recorded on a GPU model this host's slots are not: a
    re-timing on an H100 of picks an H200 search made, or one tool's arm on each, would compare across machines.
    Such a kernel is finished on its own model, or all its parts deleted and run again here. ``models`` empty
    (no GPU named): nothing to compare, nothing left out."""
    foreign, here = foreign_models(out, models), ", ".join(sorted(models))
    why = {job.name: f"its kernel's parts ran on {', '.join(sorted(foreign[part_kernel(job.name)]))}; this host "
                     f"has {here}" for job in jobs if part_kernel(job.name) in foreign}
    return [j for j in jobs if j.name not in why], why


def redo_here(out: Path, names: list[str], models: set[str], why: str, dry: bool) -> list[str]:
    """``--redo-other-gpu WHY``: move every part of a kernel in ``names`` recorded on a GPU model this host's slots
    are not to OUT/superseded/WHY/, so that all its jobs run here (its arms and its re-timing: one model a row) rather
    than :func:`elsewhere` leaving it out. Returns the moved folders' and logs' names; ``dry`` (``--check``) moves
    nothing. Refuses (exit 2, nothing moved) where that folder holds one of the names already."""
    redo = set(names) & set(foreign_models(out, models))
    moving = sorted(p for p in (out / PARTS).glob("*") if part_kernel(p.name) in redo)
    aside = out / "superseded" / why
    taken = [p.name for p in moving if (aside / p.name).exists()]
    if taken:
        print(f"--redo-other-gpu: {aside / taken[0]} exists already; name another folder", file=sys.stderr)
        raise SystemExit(2)
    if moving and not dry:
        aside.mkdir(parents=True, exist_ok=True)
        for path in moving:
            path.rename(aside / path.name)
    return [p.name for p in moving]


def expected_wall_s(jobs: list[GpuJob], n_slots: int) -> float:
    """When the last job would end by the estimates, each started as :func:`common.run_on_gpus` starts it: in list
    order, once a slot is free and its prerequisites have ended."""
    now, running, pending, ends = 0.0, [], list(jobs), {}
    while pending:
        for job in list(pending):
            if len(running) < n_slots and all(ends.get(a, float("inf")) <= now for a in job.after):
                ends[job.name] = now + job.estimate_s
                running.append(ends[job.name])
                pending.remove(job)
        later = [end for end in running if end > now]
        if pending and not later:
            break  # waiting for a job that is not in the list
        now = min(later, default=now)
        running = [end for end in running if end > now]
    return max(ends.values(), default=0.0)


def plan_fan_out(args: argparse.Namespace, names: list[str], estimates: list[float], arm_estimates: list[float],
                 acfs: list[str]) -> tuple[list[GpuSlot], list[GpuJob], list[str], dict[str, str], list[str]]:
    """The slots and jobs of a ``--gpus`` command, printed with when they would end by the estimates, the names
    of the jobs an earlier call ran (:func:`done_before`), the jobs left for another GPU model (:func:`elsewhere`),
    with why, and the parts moved aside to run here again (:func:`redo_here`)."""
    acf_arg = str(Path(acfs[0]).parent) if acfs else args.helion_acfs
    models = host_gpu_names()
    slots = gpu_slots(args.gpus, len(models))
    here = {models[int(s.gpu)] for s in slots if int(s.gpu) < len(models)}
    moved = redo_here(args.out, names, here, args.redo_other_gpu, args.check) if args.redo_other_gpu else []
    if moved:
        print(f"moved to superseded/{args.redo_other_gpu}/, to run here again: {moved}" if not args.check else
              f"would move to superseded/{args.redo_other_gpu}/ (the plan below sees them where they are): {moved}",
              flush=True)
    jobs, done = done_before(args.out, fanout_jobs(args, names, estimates, arm_estimates, acf_arg))
    jobs, other_gpu = elsewhere(args.out, jobs, here)
    if done:
        print(f"done in an earlier call, not run again: {done}", flush=True)
    for name, why in other_gpu.items():
        print(f"not run on this host: {name}: {why}", flush=True)
    print(f"fan-out: {len(jobs)} job(s) on GPUs {[s.gpu for s in slots]}, {len(slots[0].cores)} cores each, "
          f"expected {expected_wall_s(jobs, len(slots)):.0f} s (deadline {args.max_s:g} s): "
          f"{[j.name for j in jobs]}", flush=True)
    return slots, jobs, done, other_gpu, moved


def fan_out(args: argparse.Namespace, names: list[str], estimates: list[float], arm_estimates: list[float],
            acfs: list[str]) -> None:
    """Run the kernels' jobs on ``--gpus`` GPUs side by side (:func:`common.run_on_gpus`), every Helion arm with
    the same ACF list, then merge every part OUT holds (earlier calls' too) into OUT/ttq.json."""
    slots, jobs, done, other_gpu, moved = plan_fan_out(args, names, estimates, arm_estimates, acfs)
    if args.check:
        return
    try:
        run_on_gpus(jobs, slots, args.max_s)
    finally:  # stopped (the device call's timeout): what the jobs that ended wrote is still merged
        end_fan_out(args, slots, jobs, done, other_gpu, moved)


def end_fan_out(args: argparse.Namespace, slots: list[GpuSlot], jobs: list[GpuJob], done: list[str],
                other_gpu: dict[str, str], moved: list[str]) -> None:
    """Record the jobs' outcomes (OUT/fanout.jsonl), then merge every part into the table."""
    record = {"command": " ".join([sys.executable, *sys.argv]),
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "slots": [{"gpu": s.gpu, "cores": sorted(s.cores)} for s in slots],
              "jobs": [{"name": j.name, "cmd": j.cmd, "estimate_s": j.estimate_s, **j.outcome} for j in jobs],
              "done_before": done, "other_gpu": other_gpu,
              **({"moved_aside": {"to": f"superseded/{args.redo_other_gpu}", "parts": moved}} if moved else {})}
    with open(args.out / "fanout.jsonl", "a") as fh:  # one line per command (two may share OUT, on other GPUs)
        fh.write(json.dumps(record) + "\n")
    for job in jobs:
        print(f"{job.name}: {job.outcome}", flush=True)
    result = merge_parts(args.out)
    report(args.out, result, result["budgets_s"])


def put_arm(entry: dict[str, Any], arm: dict[str, Any]) -> None:
    """Add ``arm`` to a kernel's entry, in place of the same tool's (an arm run again replaces the earlier one)."""
    entry["arms"] = [a for a in entry["arms"] if a.get("tool") != arm.get("tool")] + [arm]


def fold_arms(result: dict[str, Any], part: dict[str, Any]) -> None:
    """Add ``part``'s kernels to ``result``: each arm replaces the same tool's, the kernel's re-timing and verdicts
    (and why it failed) come with the part that has them."""
    for kname, entry in part.get("kernels", {}).items():
        have = result["kernels"].setdefault(kname, {"shape": entry.get("shape"), "arms": []})
        for arm in entry.get("arms", []):
            put_arm(have, {**arm, "gpu": arm.get("gpu") or part.get("gpu")})  # parts before the field: the part's
        for key in ("retime", "winner_by", "error", "traceback"):
            if key in entry:
                have[key] = entry[key]


def packed(out: Path) -> None:
    """Refuse (exit 2) an OUT whose raw runs are packed (``benchmarks/archive_runs.py``) and not unpacked: its
    re-timings read the arms' ACF files, and without Helion's ACF list a new one would be drawn and every Helion
    arm run again. A part whose whole folder is gone was removed to be run again: its packed files are not
    asked for (``archive_runs.py --replace`` then packs the new run in their place)."""
    import tarfile

    archive = out / "runs.tar.xz"
    if not archive.exists():
        return

    def removed_part(name: str) -> bool:
        top = name.split("/")
        return top[0] == PARTS and len(top) > 2 and not (out / PARTS / top[1]).exists()

    with tarfile.open(archive) as tar:
        missing = [m.name for m in tar.getmembers()
                   if m.isfile() and not (out / m.name).exists() and not removed_part(m.name)]
    if missing:
        print(f"{archive}: {len(missing)} packed files are not unpacked (first: {missing[0]}); "
              f"first: tar -xJf {archive} -C {out}", file=sys.stderr)
        raise SystemExit(2)


def merge_parts(out: Path) -> dict[str, Any]:
    """One result of every part under OUT/parts/, oldest first by the date its last command started (a re-timing,
    started after its arms ended, keeps the arms it filled in; file times are not kept by a copy or a checkout),
    with every part's calls and budgets (a kernel run for 300 s beside others run for 120 s: the table's 300 s
    column has its row only)."""
    result: dict[str, Any] = {"budgets_s": [], "kernels": {}, "calls": [], "parts": []}
    parts = [(json.loads(path.read_text()), path) for path in (out / PARTS).glob("*/ttq.json")]
    for part, path in sorted(parts, key=lambda pp: (pp[0].get("date") or "", pp[1].stat().st_mtime)):
        result.update({k: part[k] for k in ("versions", "machine", "acf_list", "helion_acfs") if k in part})
        result["gpus"] = sorted({*result.get("gpus", []), *([part["gpu"]] if part.get("gpu") else [])})
        result["calls"] += part.get("calls") or [{k: part.get(k) for k in ("command", "date", "versions")}]
        result["parts"].append(path.parent.name)
        result["budgets_s"] = sorted({*result["budgets_s"], *part.get("budgets_s", [])})
        fold_arms(result, part)
    for entry in result["kernels"].values():  # judged again from the merged arms: a later part's gate counts
        if entry.get("winner_by") is not None:
            entry["winner_by"] = winners(entry["arms"], [float(b) for b in entry["winner_by"]])
    return result


def check(out: Path, names: list[str], known: dict[str, dict[str, Any]], strategies: list[str], budget_s: float,
          workers: int, acfs: list[str]) -> None:
    """What can be checked without a GPU: each arm's campaign loads, its kernel resolves (Helion's ConfigSpec
    bound to meta tensors, the sm90 heuristic's baseline), and the engine that would run (paretotune's default:
    Helion's search for these kernels); the Helion arm's ACF list exists."""
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter
    from paretotune.runner.start import kernel_meta

    assert len(acfs) >= 1 and all(Path(a).is_file() for a in acfs), acfs
    print(f"Helion's ACF list: {len(acfs)} files ({Path(acfs[0]).parent})")
    for kname in names:
        spec = known[kname]
        for strategy in strategies:
            folder = out / kname / strategy
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / "campaign.yaml"
            path.write_text(campaign_text(kname, spec, strategy, budget_s, workers))
            try:
                campaign = load_campaign(path)
                adapter = make_adapter(campaign)
                meta = kernel_meta(campaign, adapter)
            except Exception as exc:  # noqa: BLE001 - one line per failing arm, then the next
                print(f"{kname} {strategy}: FAILS: {type(exc).__name__}: {exc}"[:400])
                continue
            engine = next((n for n in meta["notes"] if n.startswith("search: ")), "search: CompileIQ")
            first = ""
            if strategy == "default":  # the engine's first batch, every proposal one Helion takes as it is
                from paretotune.runner.start import make_engine
                from paretotune.search.space import point_key

                eng = make_engine(campaign, adapter, 1)
                batch = eng.ask()
                accepts = adapter.constraint() or (lambda _c: True)
                bad = sum(not accepts(p.config) for p in batch)
                inner = getattr(eng, "inner", eng)
                seeds = inner.rounds[0].plan.seeds[1:] if getattr(inner, "rounds", None) else []
                seeded = len({point_key(c, None) for c, _ in seeds} & {point_key(p.config, None) for p in batch})
                first = (f"; first batch {len(batch)} proposals ({seeded} of the {len(seeds)} configs toward Helion's "
                         f"default), {bad} that Helion's normalize would change")
                close = getattr(inner, "close", None)
                if close:
                    close()
            print(f"{kname} {strategy}: ok; {len(adapter.space())} knobs; {engine}{first}")


def _save(out: Path, result: dict[str, Any], budgets: list[float]) -> list[dict[str, Any]]:
    result["summary"] = summary(result, budgets)
    (out / "ttq.json").write_text(json.dumps(result, indent=1, default=str))
    return write_table(out, result, budgets)


if __name__ == "__main__":
    main()
