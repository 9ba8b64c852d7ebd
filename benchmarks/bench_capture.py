"""Issue 31 on a GPU: capture real programs whose kernels nobody here wrote, rank the kernels, tune them with no
hand-written spec.

Three parts, run in this order, each under its share of ``--budget-s`` (the time left when it starts, split
over the parts still to run by their weights); results are written after every step, so a kill keeps what was
done, and a program or campaign past its own cap is interrupted (SIGINT: the capture still saves what it had).

1. ``overhead``: two programs timed by themselves (median step time after warm-up), plain and under
   ``paretotune capture``, plus each command's wall time: a Liger-Kernel Llama-style block's training step
   (``benchmarks/programs/liger_llama_step.py``: RMSNorm, RoPE, SwiGLU and the fused linear cross entropy from
   Liger-Kernel; forward, backward, AdamW) and the worst case, a loop of short launches of the tests' own
   Triton kernels (``benchmarks/programs/launch_loop.py``). A first plain run of each fills Triton's cache.
2. ``liger``: the training step's capture (from part 1, else made here): the ranked table, then ``acf-only``
   campaigns (objective ``runtime``) on the top ``--top`` kernels by GPU time, exactly as the capture wrote
   them, searched at once (``--liger-parallel``), then ``paretotune validate`` on each, one after the other.
3. ``helion``: the ``main()`` of each of Helion's ``examples/`` (``bash benchmarks/get_helion_examples.sh
   /work/.mirror/pytorch+helion/repo``), captured ``--jobs`` at once under ``HELION_AUTOTUNE_EFFORT=none``
   (Helion's default config: no autotuning); then every campaign they gave runs a short acf-only search
   (``--campaign-s`` wall clock or ``--campaign-candidates``, no GPU spares), ``--campaign-jobs`` at once.
   Counted: examples run, kernels captured, kernels that became campaigns (and why the others did not),
   campaigns that ran (the issue's goal: >= 30).

Liger-Kernel is pure Python: carry its wheel (``pip download --no-deps liger-kernel -d .whl``); it is unzipped
into the work folder when it does not import. Without it, part 1 measures the launch loop only and part 2 is
recorded as not run, with the reason.

On the H200, from the repository root with ``.workloads/helion-examples`` and ``.whl/`` carried (one call)::

    python benchmarks/bench_capture.py --out $OUT/capture --budget-s 420
    python benchmarks/bench_capture.py --out $OUT/capture_helion --parts helion --budget-s 480   # more campaigns

Writes ``OUT/capture_bench.json`` (everything: versions, GPU, commands, per part), ``OUT/overhead.csv``,
``OUT/liger_kernels.csv`` (the ranked table), ``OUT/liger_campaigns.csv``, ``OUT/helion_examples.csv``,
``OUT/helion_campaigns.csv``; capture folders, logs and run directories stay under ``OUT/work/``.
``--parts`` picks parts; ``--smoke``: a CPU trial (``TRITON_INTERPRET=1``, tiny sizes, static objectives).
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import re
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from common import gpu_name, last_error, stored_records, summarize_run, versions

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "benchmarks" / "programs"
# the ten pretuned kernels ../shared/workloads materialises, which bench_pretuned.py covers with hand-written inputs
THE_TEN = ("cross_entropy", "dynamic_per_token_scaled_fp8_quant", "layer_norm", "rms_norm",
           "rms_norm_dynamic_per_token_quant", "rms_norm_per_block_quant", "scaled_mm", "silu_mul_fp8", "softmax",
           "vector_add")
CAPKERNELS = ROOT / "tests" / "capture" / "programs" / "lib"
WEIGHTS = {"overhead": 1.5, "liger": 2.5, "helion": 5.0}
# examples that cannot run on one H200: several GPUs (distributed/), sm_100 only (Blackwell, NVFP4)
SKIP = {"distributed": "needs several GPUs (torch.distributed)", "blackwell_attention": "needs sm_100 (Blackwell)",
        "nvfp4_gemm": "needs sm_100 (NVFP4)", "nvfp4_gemv": "needs sm_100 (NVFP4)"}


class Results:
    """Everything measured, written to OUT after every update (a kill keeps what was done)."""

    def __init__(self, out: Path, meta: dict[str, Any]) -> None:
        self.out, self.doc, self._lock = out, {**meta, "parts": {}}, threading.Lock()

    def put(self, part: str, key: str, value: Any) -> None:
        with self._lock:
            self.doc["parts"].setdefault(part, {})[key] = value
            self._save()

    def append(self, part: str, key: str, value: Any) -> None:
        with self._lock:
            self.doc["parts"].setdefault(part, {}).setdefault(key, []).append(value)
            self._save()

    def table(self, name: str, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        keys = list(dict.fromkeys(k for r in rows for k in r))
        with (self.out / name).open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=keys)
            writer.writeheader()
            writer.writerows({k: _cell(r.get(k)) for k in keys} for r in rows)

    def _save(self) -> None:
        tmp = self.out / ".capture_bench.json.tmp"
        tmp.write_text(json.dumps(self.doc, indent=1, default=str))
        tmp.replace(self.out / "capture_bench.json")


def _cell(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, (dict, list)) else value


def run(cmd: list[str], *, cwd: Path, env: dict[str, str], log: Path, cap_s: float, grace_s: float = 40.0) -> dict[
        str, Any]:
    """Run ``cmd`` (its own process group), output to ``log``; past ``cap_s`` it gets SIGINT (a capture saves
    what it had), ``grace_s`` later SIGKILL. Return code, wall seconds, whether it was interrupted, stdout."""
    start = time.monotonic()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as handle:
        handle.write(f"$ (cd {cwd}; {' '.join(cmd)})\n")
        handle.flush()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=handle, text=True,
                                start_new_session=True)
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.extend(proc.stdout or []), daemon=True)
        reader.start()
        interrupted = False
        try:
            proc.wait(timeout=max(1.0, cap_s))
        except subprocess.TimeoutExpired:
            interrupted = True
            _signal(proc, signal.SIGINT)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                _signal(proc, signal.SIGKILL)
                proc.wait()
        reader.join(timeout=10)
        handle.write("".join(out))
    return {"rc": proc.returncode, "wall_s": round(time.monotonic() - start, 2), "interrupted": interrupted,
            "stdout": "".join(out)}


def _signal(proc: subprocess.Popen[str], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "paretotune.cli", *args]


def program_json(stdout: str) -> dict[str, Any] | None:
    """The JSON line a timed program printed (its step times)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{") and "median_ms" in line:
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def profile_top(profile: Path, text: Path, rows: int = 30) -> list[dict[str, Any]]:
    """The functions with the most time of their own in a cProfile'd capture (and the capture's own share)."""
    import io
    import pstats

    buffer = io.StringIO()
    stats = pstats.Stats(str(profile), stream=buffer)
    stats.sort_stats("tottime").print_stats(rows)
    text.write_text(buffer.getvalue())
    top = []
    for (file, line, func), (_cc, calls, own, cumulative, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        top.append({"function": f"{Path(file).name}:{line}:{func}", "calls": calls, "own_s": round(own, 4),
                    "cumulative_s": round(cumulative, 4), "capture": "paretotune" in file})
    top.sort(key=lambda r: -r["own_s"])
    capture_own = sum(r["own_s"] for r in top if r["capture"])
    return [{"capture_own_s": round(capture_own, 4), "total_own_s": round(sum(r["own_s"] for r in top), 4)},
            *top[:rows]]


def capture_rows(folder: Path) -> list[dict[str, Any]]:
    summary = folder / "summary.json"
    return json.loads(summary.read_text())["kernels"] if summary.is_file() else []


# -- part 1: overhead ------------------------------------------------------------------------------------------
def part_overhead(ctx: dict[str, Any], res: Results, deadline: float) -> None:
    programs = [("launch_loop", [str(PROGRAMS / "launch_loop.py"), *ctx["loop_args"]])]
    if ctx["liger"]["available"]:
        programs.insert(0, ("liger_step", [str(PROGRAMS / "liger_llama_step.py"), *ctx["liger_args"]]))
    for name in {"liger_step", "launch_loop"} - set(ctx["overhead_programs"]):
        res.append("overhead", "not_run", {"program": name, "why": "left out (--overhead-programs)"})
    programs = [p for p in programs if p[0] in ctx["overhead_programs"]]
    rows = []
    for p, (name, program) in enumerate(programs):
        left = deadline - time.monotonic()
        if left < 30:
            res.append("overhead", "not_run", {"program": name, "why": "out of time"})
            continue
        work = ctx["work"] / f"overhead_{name}"
        folder = work / "cap"
        profile = work / "profile.pstats"
        commands = {"warm": [sys.executable, *program],  # fills Triton's cache: the next ones compile nothing
                    "captured": cli("capture", "--out", str(folder), *ctx["capture_args"], "--", "python", *program),
                    # every call timed (the sampling off): what the events cost on top of the rest
                    "captured_all": cli("capture", "--out", str(work / "cap_all"), "--timing", "all", "--no-check",
                                        "--", "python", *program),
                    "plain": [sys.executable, *program]}
        if not ctx["time_all"]:  # bench_capture_ablation.py measures it in one process, where it costs seconds
            del commands["captured_all"]
        if ctx["profile"]:  # where a captured step's time goes (cProfile's own cost inflates every Python call)
            commands["profiled"] = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m",
                                    "paretotune.capturing.run_program", "--out", str(work / "cap_profiled"), "--",
                                    *program]
        done: dict[str, dict[str, Any]] = {}
        for i, (key, cmd) in enumerate(commands.items()):  # each gets its share of the time left for this program
            runs_left = len(commands) * (len(programs) - p) - i
            cap = max(60.0, (deadline - time.monotonic()) / runs_left)  # a cold start must finish: it may overrun
            done[key] = run(cmd, cwd=ctx["work"], env=ctx["env"], log=work / f"{key}.log", cap_s=cap)
        timed = {k: program_json(r["stdout"]) or {} for k, r in done.items()}
        captured, plain = done["captured"], done["plain"]
        row: dict[str, Any] = {"program": name, "command": " ".join(program),
                               "plain_rc": plain["rc"], "captured_rc": captured["rc"],
                               "plain_median_ms": timed["plain"].get("median_ms"),
                               "warm_plain_median_ms": timed["warm"].get("median_ms"),
                               "captured_median_ms": timed["captured"].get("median_ms"),
                               "captured_all_median_ms": timed.get("captured_all", {}).get("median_ms"),
                               "profiled_median_ms": timed.get("profiled", {}).get("median_ms"),
                               "plain_process_s": plain["wall_s"], "capture_command_s": captured["wall_s"],
                               "kernels_captured": len(capture_rows(folder))}
        for key in ("captured", "captured_all"):
            if row["plain_median_ms"] and row[f"{key}_median_ms"]:
                row[f"{key}_overhead"] = round(row[f"{key}_median_ms"] / row["plain_median_ms"] - 1, 4)
        row["step_overhead"] = row.get("captured_overhead")
        if profile.is_file():
            row["profile_top"] = profile_top(profile, work / "profile_top.txt")
        rows.append({k: v for k, v in row.items() if k != "profile_top"})  # the profile: in the JSON only
        res.append("overhead", "programs", row)
        res.table("overhead.csv", rows)
        if name == "liger_step":
            ctx["liger_capture"] = folder


# -- part 2: the Liger training step's top kernels -------------------------------------------------------------
def part_liger(ctx: dict[str, Any], res: Results, deadline: float) -> None:
    if not ctx["liger"]["available"]:
        res.put("liger", "not_run", ctx["liger"]["why_not"])
        return
    folder = ctx.get("liger_capture")
    if folder is None or not (folder / "summary.json").is_file():
        folder = ctx["work"] / "liger_capture"
        program = [str(PROGRAMS / "liger_llama_step.py"), *ctx["liger_args"]]
        done = run(cli("capture", "--out", str(folder), *ctx["capture_args"], "--", "python", *program),
                   cwd=ctx["work"], env=ctx["env"], log=ctx["work"] / "liger_capture.log",
                   cap_s=(deadline - time.monotonic()) / 3)
        res.put("liger", "capture", {k: v for k, v in done.items() if k != "stdout"})
    rows = capture_rows(folder)
    res.put("liger", "ranked", rows)
    res.put("liger", "summary_text", (folder / "summary.txt").read_text() if (folder / "summary.txt").is_file() else "")
    res.table("liger_kernels.csv", rows)
    top = [r for r in rows if r["campaign"]][:ctx["top"]]
    res.put("liger", "top", [r["kernel"] for r in top])
    validate_s = 55.0 * len(top)
    search_cap = max(30.0, deadline - time.monotonic() - validate_s)

    def search(row: dict[str, Any]) -> dict[str, Any]:
        runs = ctx["work"] / "liger_runs" / row["kernel"]
        done = run(cli("run", str(folder / row["campaign"]), "--out", str(runs), "--quiet"), cwd=ctx["work"],
                   env=ctx["run_env"], log=ctx["work"] / "logs" / f"liger_run_{row['kernel']}.log", cap_s=search_cap)
        return {"kernel": row["kernel"], "rank": row["rank"], "share": row["share"], "run": str(runs),
                "run_rc": done["rc"], "run_s": done["wall_s"], "interrupted": done["interrupted"]}

    with ThreadPoolExecutor(max_workers=ctx["liger_parallel"]) as pool:
        found = list(pool.map(search, top))
    out = []
    for item in found:  # one after the other: validation times must not share the GPU
        runs = Path(item["run"])
        left = deadline - time.monotonic()
        if (runs / "results.jsonl").is_file() and left > 20:
            done = run(cli("validate", str(runs), "--top", "2", "--rounds", str(ctx["rounds"])), cwd=ctx["work"],
                       env=ctx["run_env"], log=ctx["work"] / "logs" / f"liger_validate_{item['kernel']}.log",
                       cap_s=min(left, 90.0))
            item.update(validate_rc=done["rc"], validate_s=done["wall_s"])
            item.update(summarize_run(runs))
        elif not (runs / "results.jsonl").is_file():
            item["error"] = last_error(ctx["work"] / "logs" / f"liger_run_{item['kernel']}.log")
        out.append(item)
        res.put("liger", "campaigns", out)
        res.table("liger_campaigns.csv", out)


# -- part 3: Helion's examples ---------------------------------------------------------------------------------
def examples(folder: Path) -> list[tuple[str, str | None]]:
    """(module under ``examples`` or ``pretuned_kernels``, why it is skipped or None) for each program with a
    guarded ``main()``. The ten pretuned kernels that ``bench_pretuned.py`` covers with hand-written inputs are
    left out: the breadth counted here is beyond them."""
    out = []
    paths = sorted((folder / "pretuned_kernels").glob("*/*.py")) + sorted((folder / "examples").rglob("*.py"))
    for path in paths:
        rel = path.relative_to(folder).with_suffix("")
        text = path.read_text(errors="replace")
        if path.name.startswith("_") or "def main(" not in text or "__main__" not in text:
            continue
        if rel.parts[0] == "pretuned_kernels" and rel.parts[1] in THE_TEN:
            continue
        why = next((reason for key, reason in SKIP.items() if key in rel.parts or key == rel.name), None)
        out.append((".".join(rel.parts), why))
    return out


def part_helion(ctx: dict[str, Any], res: Results, deadline: float) -> None:
    folder = ctx["examples"]
    if not (folder / "examples").is_dir():
        res.put("helion", "not_run", f"no {folder}/examples: run benchmarks/get_helion_examples.sh first")
        return
    found = examples(folder)
    env = {**ctx["env"], "HELION_AUTOTUNE_EFFORT": "none", "PYTHONPATH": os.pathsep.join(
        [str(folder), ctx["env"].get("PYTHONPATH", "")])}
    captures = ctx["captures"]  # an earlier call's capture folders: only their campaigns run now
    capture_deadline = time.monotonic() + (0 if captures else ctx["capture_share"]) * (deadline - time.monotonic())
    rows: list[dict[str, Any]] = [{"example": m, "skipped": why} for m, why in found if why]
    todo = [m for m, why in found if not why and (not ctx["only"] or m in ctx["only"])][:ctx["max_examples"]]
    if captures:
        ctx["work"].joinpath("helion").mkdir(parents=True, exist_ok=True)
        earlier = {r["example"]: r for r in csv.DictReader((captures / "helion_examples.csv").open())}
        for module in todo:
            if (captures / "helion" / module).is_dir() and not (ctx["work"] / "helion" / module).exists():
                (ctx["work"] / "helion" / module).symlink_to(captures / "helion" / module)
        todo = []
        rows = [{**r, "kernels": int(r["kernels"] or 0), "campaigns": int(r["campaigns"] or 0), "rc": int(r["rc"]),
                 "calls": int(r["calls"] or 0), "skipped_kernels": json.loads(r.get("skipped_kernels") or "{}"),
                 "captured_in": str(captures)} if r.get("rc") else {**r, "rc": None} for r in earlier.values()]

    def capture(module: str) -> dict[str, Any]:
        cap = min(ctx["example_s"], capture_deadline - time.monotonic())
        if cap < 10:
            return {"example": module, "skipped": "out of time"}
        out = ctx["work"] / "helion" / module
        done = run(cli("capture", "--out", str(out), *ctx["helion_capture_args"], "--", "python", "-m", module),
                   cwd=folder, env=env, log=ctx["work"] / "logs" / f"helion_{module}.log", cap_s=cap)
        kernels = capture_rows(out)
        row = {"example": module, "rc": done["rc"], "wall_s": done["wall_s"], "interrupted": done["interrupted"],
               "kernels": len(kernels), "campaigns": sum(1 for k in kernels if k["campaign"]),
               "calls": sum(k["calls"] for k in kernels), "skipped_kernels": {k["kernel"]: k["skipped"] for k in
                                                                              kernels if k["skipped"]}}
        if done["rc"] != 0 and not kernels:
            row["error"] = last_error(ctx["work"] / "logs" / f"helion_{module}.log")
        res.append("helion", "examples", row)
        return row

    with ThreadPoolExecutor(max_workers=ctx["jobs"]) as pool:
        rows += list(pool.map(capture, todo))
    res.table("helion_examples.csv", rows)
    campaigns = sorted(((r["example"], k) for r in rows if r.get("campaigns")
                        for k in capture_rows(ctx["work"] / "helion" / r["example"]) if k["campaign"]),
                       key=lambda item: (item[1]["rank"], not item[0].startswith("pretuned_kernels"), item[0]))
    # every program's top kernel first, the pretuned kernels' before the examples
    res.put("helion", "campaigns_written", len(campaigns))
    if ctx["skip_ran"]:  # campaigns an earlier call ran already (its helion_campaigns.csv): not again
        done_before = {(r["example"], r["kernel"]) for r in csv.DictReader(ctx["skip_ran"].open())
                       if r.get("ran") == "True"}
        campaigns = [c for c in campaigns if (c[0], c[1]["kernel"]) not in done_before]
        res.put("helion", "skipped_ran_before", len(done_before))

    def campaign(item: tuple[str, dict[str, Any]]) -> dict[str, Any]:
        module, kernel = item
        left = deadline - time.monotonic()
        row: dict[str, Any] = {"example": module, "kernel": kernel["kernel"], "share": kernel["share"]}
        if left < ctx["campaign_s"] + 20:
            return {**row, "ran": False, "error": "out of time (not started)"}
        cap_folder = ctx["work"] / "helion" / module
        bench = cap_folder / kernel["campaign"].replace(".yaml", ".bench.yaml")
        spec = yaml.safe_load((cap_folder / kernel["campaign"]).read_text())
        if ctx["campaign_candidates"]:  # a number of ACF candidates, however long the start takes (under the cap)
            # the capture's pool_size is what CompileIQ needs for the campaign's objective columns
            spec["search"].update(generations=1, pool_size=max(ctx["campaign_candidates"],
                                                                spec["search"].get("pool_size", 8)))
            spec["search"].pop("wall_clock_s", None)
        else:  # from the process's start: with many campaigns at once their start-up may use all of it
            spec["search"].update(generations=1, wall_clock_s=ctx["campaign_s"])
        spec["evaluation"] = {"workers": 2, "gpu_spares": 0}
        bench.write_text(yaml.safe_dump(spec, sort_keys=False))
        runs = ctx["work"] / "helion_runs" / module / kernel["kernel"]
        log = ctx["work"] / "logs" / f"helion_run_{module}_{kernel['kernel']}.log"
        done = run(cli("run", str(bench), "--out", str(runs), "--quiet"), cwd=ctx["work"], env=ctx["run_env"],
                   log=log, cap_s=min(left - 5, ctx["campaign_s"] + 60))
        row.update(rc=done["rc"], wall_s=done["wall_s"], interrupted=done["interrupted"])
        if (runs / "results.jsonl").is_file():
            summary = summarize_run(runs)
            row.update(evaluated=summary["evaluated"], failed=summary["failed"], baseline_ms=summary["baseline_ms"],
                       wrong_fraction=summary["acf_wrong_fraction"], **search_result(runs))
        row["ran"] = done["rc"] == 0 and row.get("evaluated") is not None  # its baseline was built and measured
        row["searched"] = bool(row["ran"] and row.get("evaluated"))  # and at least one ACF candidate
        if not row["ran"]:
            row["error"] = last_error(log)
        res.append("helion", "campaigns", row)
        return row

    with ThreadPoolExecutor(max_workers=ctx["campaign_jobs"] or ctx["jobs"]) as pool:
        ran = list(pool.map(campaign, campaigns))
    res.table("helion_campaigns.csv", ran)
    captured = [r for r in rows if r.get("rc") is not None]
    res.put("helion", "counts", {
        "examples_found": len(found), "examples_skipped": sum(1 for r in rows if r.get("skipped")),
        "examples_captured": len(captured), "examples_exit_0": sum(r["rc"] == 0 for r in captured),
        "kernels_captured": sum(r["kernels"] for r in captured),
        "kernels_with_campaign": sum(r["campaigns"] for r in captured),
        "campaigns_run": len(ran), "campaigns_ran_ok": sum(bool(r["ran"]) for r in ran),
        "campaigns_with_candidates": sum(bool(r.get("searched")) for r in ran), "goal": 30,
        "why_no_campaign": dict(Counter(re.sub(r"'[^']*'|\(.*?\)|\d+", "_", why)[:120] for r in captured
                                        for why in r.get("skipped_kernels", {}).values()).most_common())})


def search_result(run: Path) -> dict[str, Any]:
    """Where the baseline came from and the best ratio the search itself measured (A/B-paired, but with other
    campaigns on the GPU at the same time: a lead, not a validated figure)."""
    meta = json.loads((run / "run.json").read_text()) if (run / "run.json").is_file() else {}
    sources = sorted(set(meta.get("kernel", {}).get("baseline_sources", {}).values()))
    best: float | None = None
    from paretotune import UserError

    try:
        records = stored_records(run)  # the public reader: the record's extra decoded, damage refused
    except UserError as exc:
        return {"baseline_source": "; ".join(sources), "search_best_speedup": None, "search_read_error": str(exc)}
    for rec in records:
        if rec.is_baseline or rec.status != "ok":
            continue
        ratios = [v["ratio_to_baseline"] for v in rec.extra.values()
                  if isinstance(v, dict) and v.get("ratio_to_baseline")]
        if ratios:
            speed = min(1.0 / r for r in ratios)  # the worst shape's speedup
            best = speed if best is None else max(best, speed)
    return {"baseline_source": "; ".join(sources), "search_best_speedup": None if best is None else round(best, 4)}


# -- setup -----------------------------------------------------------------------------------------------------
def liger_site(work: Path, env: dict[str, str]) -> dict[str, Any]:
    """Make ``import liger_kernel`` work in the programs' environment (the carried wheel, unzipped), or say why."""
    probe = [sys.executable, "-c", "import liger_kernel.ops, importlib.metadata as m; print(m.version('liger-kernel'))"]

    def imports(e: dict[str, str]) -> tuple[bool, str]:
        done = subprocess.run(probe, env=e, capture_output=True, text=True, timeout=300)
        return done.returncode == 0, (done.stdout.strip() or (done.stderr.strip().splitlines() or [""])[-1])

    ok, said = imports(env)
    if ok:
        return {"available": True, "version": said, "from": "installed"}
    wheels = sorted((ROOT / ".whl").glob("liger_kernel-*.whl"))
    if not wheels:
        return {"available": False, "why_not": f"liger_kernel does not import ({said}) and no .whl/liger_kernel-*.whl"}
    site = work / "liger_site"
    with zipfile.ZipFile(wheels[-1]) as wheel:
        wheel.extractall(site)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    ok, said = imports(env)
    return {"available": ok, "from": wheels[-1].name, **({"version": said} if ok else {"why_not": said})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/bench_capture")))
    parser.add_argument("--parts", default="overhead,liger,helion")
    parser.add_argument("--profile", action="store_true",
                        help="overhead: also run each program's capture under cProfile (profile_top.txt)")
    parser.add_argument("--overhead-programs", default="liger_step,launch_loop",
                        help="overhead: which programs are timed plain and captured, each in its own process")
    parser.add_argument("--no-time-all", action="store_true",
                        help="overhead: leave out the capture with --timing all (bench_capture_ablation.py times it "
                             "in one process)")
    parser.add_argument("--budget-s", type=float, default=420.0, help="wall time for all parts of this call")
    parser.add_argument("--examples", type=Path, default=ROOT / ".workloads" / "helion-examples")
    parser.add_argument("--jobs", type=int, default=8, help="Helion examples (and their campaigns) at once")
    parser.add_argument("--example-s", type=float, default=75.0, help="cap per Helion example's capture")
    parser.add_argument("--campaign-s", type=float, default=30.0, help="search.wall_clock_s per Helion campaign")
    parser.add_argument("--campaign-jobs", type=int, default=0, help="Helion campaigns at once (default: --jobs)")
    parser.add_argument("--campaign-candidates", type=int, default=0,
                        help="instead of --campaign-s as the search's wall clock: one generation of this many ACF "
                             "candidates (or the capture's pool_size, if larger: CompileIQ's minimum for the "
                             "objective columns), the campaign's process still capped at --campaign-s + 60 s "
                             "(H200, 2026-12-02: ten campaigns at once spent a 45 s wall clock on their start)")
    parser.add_argument("--max-examples", type=int, default=1000)
    parser.add_argument("--only", default="", help="Helion programs to capture, comma-separated modules "
                        "(examples.rms_norm,...): with --skip-ran, a call for the campaigns an earlier one never "
                        "started")
    parser.add_argument("--captures", type=Path, default=None,
                        help="run the campaigns of an earlier call's Helion captures (its OUT: helion_examples.csv and "
                             "work/helion/), capturing nothing")
    parser.add_argument("--skip-ran", type=Path, default=None,
                        help="with --captures: leave out the campaigns this earlier helion_campaigns.csv says ran")
    parser.add_argument("--capture-share", type=float, default=0.4,
                        help="the share of the Helion part's time that capturing may take (the rest: their campaigns)")
    parser.add_argument("--top", type=int, default=3, help="Liger kernels to tune, by GPU time")
    parser.add_argument("--liger-parallel", type=int, default=3, help="Liger campaigns searched at once")
    parser.add_argument("--rounds", type=int, default=12, help="validation rounds per arm")
    parser.add_argument("--smoke", action="store_true", help="a CPU trial: TRITON_INTERPRET=1, tiny sizes")
    args = parser.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    if set(parts) - set(WEIGHTS):
        parser.error(f"--parts: unknown {sorted(set(parts) - set(WEIGHTS))} (known: {', '.join(WEIGHTS)})")
    started = time.monotonic()
    out = args.out.resolve()
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    # JAX, imported by some of Helion's examples, takes 75 % of the GPU's memory at start unless told not to: with
    # programs side by side that starved the others (H200, 2026-12-02: "Failed to allocate 104.85GiB")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(CAPKERNELS), os.environ.get("PYTHONPATH", "")])}
    run_env = dict(env)  # campaigns build real kernels: never under the interpreter
    if args.smoke:
        env["TRITON_INTERPRET"] = "1"
    liger = liger_site(work, env) if "overhead" in parts or "liger" in parts else {"available": False,
                                                                                  "why_not": "part not run"}
    run_env["PYTHONPATH"] = env["PYTHONPATH"]
    if args.smoke and liger["available"]:
        liger = {**liger, "available": False, "why_not": "Liger's kernels fail under TRITON_INTERPRET (smoke)"}
    ctx: dict[str, Any] = {
        "work": work, "env": env, "run_env": run_env, "liger": liger, "examples": args.examples.resolve(),
        "jobs": args.jobs, "profile": args.profile, "time_all": not args.no_time_all,
        "overhead_programs": [p.strip() for p in args.overhead_programs.split(",") if p.strip()],
        "example_s": args.example_s, "campaign_s": args.campaign_s, "max_examples": args.max_examples,
        "only": {m.strip() for m in args.only.split(",") if m.strip()},
        "campaign_candidates": args.campaign_candidates, "campaign_jobs": args.campaign_jobs,
        "capture_share": args.capture_share, "captures": args.captures.resolve() if args.captures else None,
        "skip_ran": args.skip_ran.resolve() if args.skip_ran else None,
        "top": args.top, "liger_parallel": args.liger_parallel, "rounds": args.rounds,
        "liger_args": ["--steps", "20", "--warmup", "3"],
        "loop_args": ["--iters", "50", "--warmup", "5", "--n", "4096", "--rows", "16"] if args.smoke else
        ["--iters", "1000", "--warmup", "50"],
        "capture_args": ["--shapes", "2", "--generations", "1" if args.smoke else "3", "--wall-clock-s", "60"],
        "helion_capture_args": ["--shapes", "2", "--generations", "1"],
    }
    res = Results(out, {
        "command": " ".join([sys.executable, *sys.argv]), "date": datetime.datetime.now(datetime.UTC).isoformat(),
        "host": platform.node(), "gpu": gpu_name(), "versions": versions(), "liger": liger, "parts_run": parts,
        "budget_s": args.budget_s, "smoke": args.smoke})
    deadline_all = started + args.budget_s
    for i, part in enumerate(parts):
        left = deadline_all - time.monotonic()
        share = WEIGHTS[part] / sum(WEIGHTS[p] for p in parts[i:])
        part_deadline = time.monotonic() + left * share
        t0 = time.monotonic()
        print(f"=== {part}: {left * share:.0f} s", flush=True)
        try:
            {"overhead": part_overhead, "liger": part_liger, "helion": part_helion}[part](ctx, res, part_deadline)
        except Exception as exc:  # noqa: BLE001 - a part that breaks is recorded; the others still run
            res.put(part, "error", f"{type(exc).__name__}: {exc}")
        res.put(part, "wall_s", round(time.monotonic() - t0, 1))
    res.put("all", "wall_s", round(time.monotonic() - started, 1))
    print(report(res.doc))
    return 0


def report(doc: dict[str, Any]) -> str:
    """The lines worth reading first."""
    parts, lines = doc["parts"], []
    for row in parts.get("overhead", {}).get("programs", []):
        lines.append(f"overhead {row['program']}: step {row.get('plain_median_ms')} ms plain, "
                     f"{row.get('captured_median_ms')} ms captured ({row.get('step_overhead')}); process "
                     f"{row['plain_process_s']} s, capture command {row['capture_command_s']} s")
    liger = parts.get("liger", {})
    if liger.get("summary_text"):
        lines.append(liger["summary_text"].rstrip())
    for item in liger.get("campaigns", []):
        best = item.get("best_validated") or {}
        lines.append(f"liger {item['kernel']}: run rc {item['run_rc']} ({item['run_s']} s), evaluated "
                     f"{item.get('evaluated')}, best validated {best.get('speedup')} "
                     f"[{best.get('ci_low')}, {best.get('ci_high')}] significant {best.get('significant')}"
                     + (f"; {item['error']}" if item.get("error") else ""))
    if "not_run" in liger:
        lines.append(f"liger: not run ({liger['not_run']})")
    counts = parts.get("helion", {}).get("counts")
    if counts:
        lines.append("helion: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    for part, body in parts.items():
        if "error" in body:
            lines.append(f"{part}: ERROR {body['error']}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
