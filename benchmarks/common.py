"""What several benchmark scripts share, so that no script imports another: facts about the machine a figure was
taken on, the versions and GPU it names, one run directory summed up, a log's telling line, and running another
tool's arm in a child under a watchdog.

Scripts run as ``python benchmarks/NAME.py`` (Python puts ``benchmarks/`` first on ``sys.path``), so ``import
common`` finds this file without any script editing ``sys.path``; see ``benchmarks/README.md``.

A head-to-head must survive a peer that hangs or overruns (Helion's autotuner hung on a sampled ACF until an
outer timeout killed it, and overran a 108 s budget to 243 s on layer_norm): its arm runs in a child process
group, is killed at its budget plus a short grace, and the outcome says so instead of the benchmark waiting.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RESULT_PREFIX = "TTQ_RESULT "  # the line a child prints with its JSON result
GRACE_S = 15.0  # past its budget an arm may still be closing (writing its result); longer is an overrun
STALLED_S = 20.0  # a child killed with no sign of progress for this long had hung, not overrun
WRONG = re.compile(r"wrong answer|wrong shape|NaN in output|no output", re.I)
FAULT = re.compile(r"fault|illegal|CUDA error|worker died|crash|signal|core dumped|misaligned", re.I)


# -- a workload kernel as a campaign ---------------------------------------------------------------------------
def workload_campaign(kernel_file: Path, name: str, folder: Path) -> Any:
    """The campaign of a pretuned workload kernel (``.workloads/``) on its first shape, runtime only, loaded (not
    run): what the checks that only resolve and build a kernel need."""
    from paretotune.campaign.load import campaign_from_text
    from paretotune.kernels.workloads import WORKLOAD_SHAPES

    shape = "{" + ", ".join(f"{k}: {v}" for k, v in WORKLOAD_SHAPES[name][0].items()) + "}"
    text = (f"name: keys-{name}\nkernel:\n  source: {kernel_file}:{name}\n"
            f"  inputs: paretotune.kernels.workloads:{name}\nshapes: [{shape}]\nobjectives: [runtime]\n")
    return campaign_from_text(text, folder / f"keys-{name}.yaml")


# -- the machine and the versions a figure was taken with ----------------------------------------------------
def trees_of(specs: list[str]) -> dict[str, Path]:
    """``LABEL=PATH`` arguments (paretotune source trees compared by a benchmark) as label -> resolved path."""
    return {label: Path(path).resolve() for label, _, path in (t.partition("=") for t in specs)}


def tree_record(trees: dict[str, Path]) -> dict[str, dict[str, str | None]]:
    """Each tree's path and its git HEAD (short), for the result file."""
    def head(tree: Path) -> str | None:
        done = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True)
        return done.stdout.strip() or None

    return {label: {"path": str(tree), "commit": head(tree)} for label, tree in trees.items()}


def tree_arguments(parser: argparse.ArgumentParser, runs: int) -> None:
    """``--tree LABEL=PATH`` (repeated), ``--runs`` and ``--out``: a benchmark that compares source trees."""
    parser.add_argument("--tree", action="append", required=True, metavar="LABEL=PATH",
                        help="a paretotune source tree (the folder holding paretotune/)")
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--out", type=Path)


def interleaved(trees: dict[str, Path], runs: int, one_run: Callable[[Path, Path], dict[str, Any]]
                ) -> tuple[dict[str, list[dict[str, Any]]], list[list[float] | None]]:
    """``one_run(tree, work)`` ``runs`` times per tree, tree after tree (so drift hits every tree alike), each in a
    fresh temporary folder; each result printed as it comes. Returns the results per tree label and the load
    average before and after."""
    out: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
    loads = [load_average()]
    for _ in range(runs):
        for label, tree in trees.items():
            with tempfile.TemporaryDirectory() as work:
                out[label].append(one_run(tree, Path(work)))
                print(label, json.dumps(out[label][-1]), flush=True)
    loads.append(load_average())
    return out, loads


def comparison_record(what: str, trees: dict[str, Path], loads: list[list[float] | None]) -> dict[str, Any]:
    """The head of a tree-comparing benchmark's result: what it measures, the command, the date, the machine and
    its load before and after, each tree's path and commit."""
    import datetime

    return {"what": what, "command": " ".join([sys.executable, *sys.argv]),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": {"cpu": cpu_model(), **cpu_topology(), "python": platform.python_version(),
                        "load_average_before_after": loads},
            "trees": tree_record(trees)}


def append_result(out: Path | None, result: dict[str, Any]) -> None:
    """Add ``result`` to the JSON list in ``out`` (made if missing): results files accumulate dated entries."""
    if out:
        old = json.loads(out.read_text()) if out.is_file() else []
        out.write_text(json.dumps([*old, result], indent=1) + "\n")


def load_average() -> list[float] | None:
    """1/5/15-minute load: a busy machine explains a slow figure."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_topology() -> dict[str, int | None]:
    """Logical CPUs, physical cores and sockets: 16 "cores" may be 8 cores with two threads each."""
    cores: set[tuple[str, str]] = set()
    phys, core = "", ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("physical id"):
                phys = line.split(":", 1)[1].strip()
            elif line.startswith("core id"):
                core = line.split(":", 1)[1].strip()
                cores.add((phys, core))
    except OSError:
        pass
    return {"logical_cpus": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0)),
            "physical_cores": len(cores) or None, "sockets": len({p for p, _ in cores}) or None}


def nvidia_smi(*args: str) -> subprocess.CompletedProcess[str] | None:
    """``nvidia-smi ARGS`` (it asks no CUDA context); None where it is missing or does not answer in 30 s."""
    try:
        return subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def gpu_name() -> str:
    done = nvidia_smi("--query-gpu=name", "--format=csv,noheader")
    return "unknown (no nvidia-smi)" if done is None else done.stdout.strip() or "unknown"


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for dist in ("helion", "torch", "triton", "compileiq", "nvidia-cuda-nvcc"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


# -- what a run or a log says --------------------------------------------------------------------------------
def summarize_run(run: Path) -> dict[str, Any]:
    """Counts from results.jsonl and the validation verdicts of one run directory."""
    from paretotune.build.base import CUT_PREFIX  # no public form: the error prefix of a candidate cut at the limit

    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    base = next((r for r in rows if r.get("is_baseline")), None)
    sampled = [r for r in rows if not r.get("is_baseline") and r.get("acf")]
    errors = [str(r.get("error") or "") for r in sampled if r.get("status") != "ok"]
    runtime_cols = [k for k in (base or {}) if k.startswith("runtime")]
    out: dict[str, Any] = {
        "evaluated": len(rows) - 1, "failed": sum(r.get("status") != "ok" for r in rows[1:]),
        "cut_at_wall_clock": sum(r.get("status") != "ok" and str(r.get("error") or "").startswith(CUT_PREFIX)
                                 for r in rows[1:]),
        "baseline_ms": {k: base[k] for k in runtime_cols} if base else None,
        "acfs_sampled": len(sampled),
        "acf_wrong_fraction": sum(bool(WRONG.search(e)) for e in errors) / len(sampled) if sampled else None,
        "acf_fault_fraction": sum(bool(FAULT.search(e)) and not WRONG.search(e) for e in errors) / len(sampled)
        if sampled else None,
        "failure_examples": sorted({e[:160] for e in errors})[:5],
    }
    timing = (json.loads((run / "run.json").read_text()).get("timing") or [{}])[-1]  # none if killed
    out.update({k: timing.get(k) for k in ("phases_s", "gpu_busy_fraction", "gpu_build_s_per_candidate")})
    verdicts = run / "validation.csv"
    if verdicts.is_file():
        out.update(_verdicts(verdicts))
    return out


def _verdicts(path: Path) -> dict[str, Any]:
    """The best validated candidate, how many were significant on every shape, and the control's verdict."""
    import pandas as pd

    out: dict[str, Any] = {}
    table = pd.read_csv(path)
    cands = table[table["role"] == "candidate"] if "role" in table else table
    control = table[table["role"] == "control"] if "role" in table else table.iloc[0:0]
    if not cands.empty:
        best = cands.sort_values("speedup", ascending=False).iloc[0]
        out["best_validated"] = {k: (None if pd.isna(best.get(k)) else best.get(k).item()
                                     if hasattr(best.get(k), "item") else best.get(k))
                                 for k in ("candidate_id", "shape", "speedup", "ci_low", "ci_high", "p_holm",
                                           "significant")}
        out["significant_candidates"] = int(cands.groupby("candidate_id")["significant"].all().sum())
    if not control.empty:
        c = control.iloc[0]
        out["control"] = {"speedup": float(c["speedup"]), "p_holm": float(c["p_holm"]),
                          "significant": bool(c["significant"])}
    return out


@dataclass(frozen=True)
class StoredRecord:
    """One stored candidate as the public reader gives it (``paretotune.open_run(run).results``, one row per
    candidate), its JSON fields decoded and its objective columns gathered in ``values``."""

    candidate_id: int
    generation: int
    config: dict[str, Any]
    acf: str | None
    is_baseline: bool
    status: str
    error: str
    measure_s: float
    values: dict[str, float]
    stages: dict[str, float]
    extra: dict[str, Any]


_FIELDS = {"candidate_id", "generation", "config", "acf", "is_baseline", "status", "error", "compile_s",
           "measure_s", "stages", "extra"}


def stored_records(run: Path) -> list[StoredRecord]:
    """A run's records, in file order, through ``paretotune.open_run`` (the checks every command makes; a
    damaged run is its one-line ``UserError``)."""
    import math

    import paretotune

    out = []
    for row in paretotune.open_run(run).results.to_dict("records"):
        values = {k: float(v) for k, v in row.items() if k not in _FIELDS and isinstance(v, (int, float))
                  and not isinstance(v, bool) and not math.isnan(v)}
        out.append(StoredRecord(
            candidate_id=int(row["candidate_id"]), generation=int(row["generation"]),
            config=json.loads(row["config"]), acf=row["acf"] or None, is_baseline=bool(row["is_baseline"]),
            status=str(row["status"]), error=str(row.get("error") or ""), measure_s=float(row.get("measure_s") or 0),
            values=values, stages=json.loads(row.get("stages") or "{}"), extra=json.loads(row.get("extra") or "{}")))
    return out


def run_meta(run: Path) -> dict[str, Any]:
    """``run.json`` of a run directory (its documented metadata: timing entries, start-up seconds, versions)."""
    return json.loads((run / "run.json").read_text())


def last_error(log: Path) -> str:
    """The line of a log that says why: paretotune's own error, else the last exception line, else the last line
    (a run's closing notes and a capture's empty table came after the error in the 2026-12-02 calls)."""
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip() and "Warning" not in ln]
    for line in reversed(lines):
        if line.startswith("paretotune: error") or re.match(r"^[\w.]*(Error|Exception|Interrupt)\b", line):
            return line[:300]
    return lines[-1][:300] if lines else ""


# -- another tool's arm, under a watchdog --------------------------------------------------------------------


@dataclass
class ChildOutcome:
    """How a watched child ended: ``finished`` (exited by itself), ``overran`` (killed past its budget while it
    was still making progress) or ``hung`` (killed after :data:`STALLED_S` or more without any); its result,
    output tail and seconds, and the seconds it had been stalled when it was killed."""

    outcome: str
    wall_s: float
    returncode: int | None
    result: dict[str, Any] = field(default_factory=dict)
    log_tail: str = ""
    stalled_s: float = 0.0

    def as_row(self) -> dict[str, Any]:
        row = {**self.result, "watchdog": self.outcome, "process_wall_s": round(self.wall_s, 3),
               "returncode": self.returncode}
        if self.outcome != "finished":
            row["error"] = (f"{self.outcome}: killed by the watchdog after {self.wall_s:.0f} s (budget plus "
                            f"{GRACE_S:g} s grace; no progress for the last {self.stalled_s:.0f} s)"
                            + (f"; {row['error']}" if "error" in row else ""))
        if not self.result:
            row["log_tail"] = self.log_tail
        return row


def startup_s(row: dict[str, Any]) -> float:
    """Seconds a child arm took from its process start to its tool's start (0 when either is missing)."""
    return row.get("start_epoch", 0.0) - row.get("process_epoch", row.get("start_epoch", 0.0))


def helion_csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of the CSV Helion's autotuner writes (``autotune_log``), [] where it wrote none."""
    import csv

    if not path.exists():
        return []
    with open(path) as fh:
        return list(csv.DictReader(fh))


def run_with_watchdog(cmd: list[str], budget_s: float, env: dict[str, str] | None = None,
                      grace_s: float = GRACE_S, progress: Any = None) -> ChildOutcome:
    """Run ``cmd`` in its own process group; kill the whole group at ``budget_s + grace_s``. The child's stdout and
    stderr go to a temporary file (never a pipe that could fill and stall it); its last ``RESULT_PREFIX`` line
    is its result. Progress is its output growing, or the value of ``progress()`` (e.g. the rows of its log
    file) changing, read about twice a second; a killed child that made none for :data:`STALLED_S` had hung."""
    import tempfile

    start = time.monotonic()
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True, env=env,
                                start_new_session=True)
        killed, seen, moved_at = False, None, start
        while proc.poll() is None:
            now_seen = (os.fstat(log.fileno()).st_size, progress() if progress is not None else None)
            if now_seen != seen:
                seen, moved_at = now_seen, time.monotonic()
            if time.monotonic() - start > budget_s + grace_s:
                _kill_group(proc)
                killed = True
                break
            time.sleep(0.5)
        proc.wait()
        wall = time.monotonic() - start
        log.seek(0)
        text = log.read()
    found = [line for line in text.splitlines() if line.startswith(RESULT_PREFIX)]
    result = json.loads(found[-1][len(RESULT_PREFIX):]) if found else {}
    if not killed:
        return ChildOutcome("finished", wall, proc.returncode, result, text[-1500:])
    stalled = time.monotonic() - moved_at
    return ChildOutcome("hung" if stalled >= STALLED_S else "overran", wall, proc.returncode, result, text[-1500:],
                        stalled_s=stalled)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the child's whole process group (a tool's own workers with it)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# -- several GPUs of one host, one job on each at a time ----------------------------------------------------


@dataclass(frozen=True)
class GpuSlot:
    """One GPU of this host (its ``CUDA_VISIBLE_DEVICES`` value) and the cores a job on it may use: an equal,
    disjoint share of this process's, so that two jobs side by side build on as many cores as one job on a
    one-GPU host of the same kind (an H200 host has 16 cores per GPU)."""

    gpu: str
    cores: frozenset[int]


@dataclass
class GpuJob:
    """A command for one slot; ``after``: names of jobs that must have ended with exit code 0 first;
    ``estimate_s``: how long it is expected to hold its GPU (a job that would end past the deadline is not
    started)."""

    name: str
    cmd: list[str]
    log: Path
    estimate_s: float
    after: tuple[str, ...] = ()
    outcome: dict[str, Any] = field(default_factory=dict)  # filled: gpu, cores, start_s, wall_s, returncode


def host_gpus() -> int:
    """How many GPUs ``nvidia-smi`` lists on this host (0 without one); asks no CUDA context."""
    return len(host_gpu_names())


def host_gpu_names() -> list[str]:
    """The model of each GPU ``nvidia-smi -L`` lists, by index (``NVIDIA H200``; the name torch's
    ``get_device_name`` gives); empty without one. Asks no CUDA context."""
    done = nvidia_smi("-L")
    out = "" if done is None else done.stdout
    return [line.split(": ", 1)[1].split(" (UUID")[0].strip() for line in out.splitlines()
            if line.startswith("GPU ") and ": " in line]


def cuda_context_holders(root_pid: int) -> dict[str, Any] | None:
    """Which processes of ``root_pid``'s tree hold a CUDA context now, by ``nvidia-smi --query-compute-apps`` (the
    processes with a context on any GPU, their memory), each with its depth in the tree (0: the root; a fork
    server's workers are 2) and how many children it has. None without nvidia-smi. Asks no CUDA context itself."""
    out = nvidia_smi("--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits")
    if out is None or out.returncode != 0:
        return None
    memory: dict[int, float | None] = {}
    for line in out.stdout.splitlines():
        pid, _, mib = (part.strip() for part in line.partition(","))
        if pid.isdigit():
            memory[int(pid)] = float(mib) if mib.replace(".", "", 1).isdigit() else None
    parents = process_parents()
    depth = process_tree(root_pid, parents)
    holding = [{"pid": pid, "depth": depth[pid], "mib": memory[pid],
                "children": sum(1 for parent in parents.values() if parent == pid)}
               for pid in sorted(depth) if pid in memory]
    return {"tree": len(depth), "by_depth": {str(d): sum(1 for v in depth.values() if v == d)
                                             for d in sorted(set(depth.values()))},
            "holding": holding, "others": len(set(memory) - set(depth))}


def process_parents() -> dict[int, int]:
    """Every live process's parent (``paretotune.processes.process_table``: /proc, zombies included)."""
    from paretotune.processes import process_table

    return {pid: parent for pid, _, parent, _, _ in process_table()}


def process_tree(root_pid: int, parents: dict[int, int]) -> dict[int, int]:
    """Every process under ``root_pid`` in ``parents`` (itself included, if alive), with its depth below it."""
    depth = {root_pid: 0} if root_pid in parents else {}
    frontier = list(depth)
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in depth:
                depth[child] = depth[pid] + 1
                frontier.append(child)
    return depth


def gpu_slots(gpus: list[int], n_host_gpus: int, cores: list[int] | None = None) -> list[GpuSlot]:
    """A slot for each GPU index of ``gpus``: GPU ``i`` gets the ``i``-th of ``n_host_gpus`` equal shares of
    ``cores`` (default: this process's), the same share whichever command asks, so that two commands on
    different GPUs of one host never share a core; with fewer cores than GPUs, every slot shares them all."""
    cores = sorted(os.sched_getaffinity(0) if cores is None else cores)
    per = len(cores) // max(n_host_gpus, max(gpus) + 1)
    return [GpuSlot(str(i), frozenset(cores[i * per:(i + 1) * per] if per else cores)) for i in gpus]


def slot_env(slot: GpuSlot, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a job on ``slot``: only its GPU visible, and the core count tools read
    (``os.cpu_count()`` ignores affinity; Helion sizes its precompile pool by it) set to the slot's."""
    return {**(os.environ if env is None else env), "CUDA_VISIBLE_DEVICES": slot.gpu,
            "HELION_AUTOTUNE_PRECOMPILE_JOBS": str(len(slot.cores))}


def run_on_gpus(jobs: list[GpuJob], slots: list[GpuSlot], deadline_s: float, poll_s: float = 0.5) -> None:
    """Run ``jobs`` (in list order, as prerequisites allow), at most one on each slot at a time, each in its own
    process group pinned to its slot's cores, output to its log. A job is skipped, with the reason in its
    ``outcome``, when a prerequisite did not end with exit code 0, or when by its estimate it would end past
    ``deadline_s`` seconds from now; a job still running at the deadline is killed (its group with it), and so is
    every running job when this process is stopped (SIGTERM, as ``timeout`` stops it; Ctrl-C)."""
    start = time.monotonic()
    pending, running, free = list(jobs), {}, list(slots)  # running: job name -> (job, slot, process, log file)
    ended: dict[str, int | None] = {}
    previous = signal.signal(signal.SIGTERM, _stopped)  # the jobs lead their own sessions: they would live on
    try:
        _schedule(pending, running, free, ended, start, deadline_s, poll_s)
    finally:
        for job, _, proc, fh in running.values():
            _kill_group(proc)
            proc.wait()
            fh.close()
            job.outcome.update(returncode=proc.returncode, error="killed: the command running the jobs was stopped")
        signal.signal(signal.SIGTERM, previous)


def _stopped(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _schedule(pending: list[GpuJob], running: dict[str, Any], free: list[GpuSlot], ended: dict[str, int | None],
              start: float, deadline_s: float, poll_s: float) -> None:
    """:func:`run_on_gpus`'s loop: end what ended (or is late), start what may start, until nothing is left."""
    while pending or running:
        for name, (job, slot, proc, fh) in list(running.items()):
            late = time.monotonic() - start > deadline_s
            if proc.poll() is None and not late:
                continue
            if proc.poll() is None:
                _kill_group(proc)
                proc.wait()
                job.outcome["error"] = f"killed at the deadline ({deadline_s:g} s)"
            fh.close()
            job.outcome.update(wall_s=round(time.monotonic() - start - job.outcome["start_s"], 1),
                               returncode=proc.returncode)
            ended[name] = proc.returncode
            free.append(slot)
            del running[name]
        for job in list(pending):
            failed = [a for a in job.after if a in ended and ended[a] != 0]
            if failed:
                job.outcome["skipped"] = f"after {', '.join(failed)}, which did not end with exit code 0"
            elif time.monotonic() - start + job.estimate_s > deadline_s:
                job.outcome["skipped"] = (f"would end past the deadline ({deadline_s:g} s; estimate "
                                          f"{job.estimate_s:.0f} s, at {time.monotonic() - start:.0f} s)")
            elif free and all(a in ended for a in job.after):
                slot = free.pop(0)
                job.log.parent.mkdir(parents=True, exist_ok=True)
                fh = open(job.log, "w")  # noqa: SIM115 - closed when the job ends
                proc = subprocess.Popen(job.cmd, stdout=fh, stderr=subprocess.STDOUT, env=slot_env(slot),
                                        start_new_session=True, preexec_fn=_pin(slot.cores))  # noqa: PLW1509
                job.outcome.update(gpu=slot.gpu, cores=len(slot.cores),
                                   start_s=round(time.monotonic() - start, 1))
                running[job.name] = (job, slot, proc, fh)
            else:
                continue
            pending.remove(job)
            if "skipped" in job.outcome:
                ended[job.name] = None
        if pending or running:
            time.sleep(poll_s)


def _pin(cores: frozenset[int]) -> Any:
    """A ``preexec_fn`` that pins the child (and what it starts) to ``cores``."""
    def pin() -> None:
        os.sched_setaffinity(0, cores)
    return pin
