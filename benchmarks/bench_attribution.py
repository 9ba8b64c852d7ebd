"""How much of each validated speedup is the config's and how much the ACF's, as the product reports it.

Issue 16's attribution table (occupancy softmax: ``num_warps=16`` alone gave 1.201x, its ACF +1.7 % on top)
was measured by hand. This script reproduces it with the product only, the way a user would run it:

1. ``paretotune run`` on two bundled runtime campaigns, ~3 generations each (the search adds the no-ACF twin
   of every ACF candidate on its front by itself):
   - ``occupancy-softmax``: configs/occupancy_softmax.yaml as bundled (runtime + ncu occupancy + L1TEX);
   - ``layer-norm-runtime``: the bundled Triton layer norm (configs/static_triton_layer_norm.yaml's kernel and
     shape) with a runtime objective;
2. ``paretotune front``, then ``paretotune validate --candidates`` with front 0's first ``--top``/2 and the
   fastest ACF candidates, ``--top`` in all (each beside its no-ACF twin, the control gating the shape);
3. ``paretotune report``.

Everything each command printed goes to OUT/<campaign>/{run,validate,front,report}.{out,err}; the run
directories stay under OUT/<campaign>/run. ``OUT/summary.json`` holds the command line, date, commit, GPU,
versions, every step's exit code and wall time, and the attribution rows read from each validation.csv. The
last thing printed is the table: per candidate, total / config-only / ACF-only speedups and the noise floor.

Time: about 4 minutes of GPU time (``--budget-s``, 240 by default); a step is not started when the budget
is spent, and each step is killed at the time that is left. A failure of one campaign is recorded and the
next one still runs.

Run on the GPU machine, from the repository root:
``python benchmarks/bench_attribution.py --out benchmarks/results/h200_attribution``
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]


def campaigns(generations: int) -> dict[str, dict[str, Any]]:
    """The two campaigns as YAML documents (bundled files, generations set)."""
    occupancy = yaml.safe_load((REPO / "configs" / "occupancy_softmax.yaml").read_text())
    occupancy["search"]["generations"] = generations
    layer_norm = yaml.safe_load((REPO / "configs" / "static_triton_layer_norm.yaml").read_text())
    layer_norm.update(name="layer-norm-runtime", objectives=["runtime"])
    layer_norm["search"].update(generations=generations, pool_size=10)
    layer_norm["evaluation"] = {"workers": 8, "warmup_ms": 10, "rep_ms": 40}
    return {"occupancy-softmax": occupancy, "layer-norm-runtime": layer_norm}


def facts() -> dict[str, Any]:
    def run(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False,
                                  cwd=REPO).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    versions = {"python": platform.python_version()}
    for dist in ("paretotune", "torch", "triton", "compileiq", "helion", "nvidia-cuda-nvcc"):
        try:
            versions[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return {"command": " ".join([sys.executable, *sys.argv]),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "commit": run(["git", "rev-parse", "HEAD"]), "dirty": bool(run(["git", "status", "--porcelain"])),
            "gpu": run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]),
            "host": platform.node(), "versions": versions}


class Budget:
    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()


def step(name: str, argv: list[str], folder: Path, budget: Budget, cap_s: float) -> dict[str, Any]:
    """Run one CLI command, its output kept in files; skipped when the budget is spent."""
    timeout = min(cap_s, budget.left())
    record: dict[str, Any] = {"step": name, "argv": argv}
    if timeout < 5:
        return {**record, "rc": None, "skipped": "time budget spent"}
    started = time.monotonic()
    with open(folder / f"{name}.out", "w") as out, open(folder / f"{name}.err", "w") as err:
        try:
            rc = subprocess.run(argv, stdout=out, stderr=err, cwd=REPO, timeout=timeout, check=False).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    record.update(rc=rc, wall_s=round(time.monotonic() - started, 1))
    print(f"  {name}: rc={rc} in {record['wall_s']} s", flush=True)
    return record


def choose(run_dir: Path, top: int) -> list[int]:
    """Front 0 (what ``validate`` picks by itself), then the fastest ACF candidates, ``top`` in all: a
    single-objective front is one point, perhaps a no-ACF twin, and the table needs ACF candidates."""
    import pandas as pd

    front = json.loads(subprocess.run([sys.executable, "-m", "paretotune.cli", "front", str(run_dir), "--json"],
                                      capture_output=True, text=True, cwd=REPO, timeout=60, check=True).stdout)
    ids = [r["candidate_id"] for r in front["front"] if not r["is_baseline"]][: max(1, top // 2)]
    df = pd.read_json(run_dir / "results.jsonl", lines=True)
    runtime = next((c for c in df.columns if str(c).startswith("runtime")), None)
    if runtime is not None:
        acf = df[(df["status"] == "ok") & (df["acf"] != "")].sort_values(runtime)
        ids += [int(c) for c in acf["candidate_id"] if int(c) not in ids]
    return ids[:top]


def attribution_rows(run_dir: Path) -> list[dict[str, Any]]:
    """Candidate rows of validation.csv with the three ratios, and the shape's control verdict."""
    import pandas as pd

    path = run_dir / "validation.csv"
    if not path.is_file():
        return []
    table = pd.read_csv(path)
    keep = ["shape", "candidate_id", "speedup", "ci_low", "ci_high", "p_holm", "twin_id", "config_speedup",
            "config_ci_low", "config_ci_high", "acf_speedup", "acf_ci_low", "acf_ci_high", "acf_p_holm",
            "noise_floor", "reliable", "significant"]
    cands = table[table["role"] == "candidate"]
    rows = json.loads(cands[[c for c in keep if c in cands.columns]].to_json(orient="records"))
    try:
        saved = json.loads((run_dir / "validation.json").read_text())
        for row in rows:
            row["best_no_acf"] = saved.get("best_no_acf", {}).get(row["shape"])
    except (OSError, ValueError):
        pass
    return rows


def table(summary: dict[str, Any]) -> str:
    def x(v: Any) -> str:
        return "-" if v is None else f"{float(v):.3f}x"

    lines = [f"{'campaign':<20} {'shape':<6} {'cand':>4} {'total':>8} {'config':>8} {'ACF':>8} {'floor':>7} "
             f"{'ok':>3} best no-ACF (search)"]
    for name, result in summary["campaigns"].items():
        if not result.get("attribution"):
            lines.append(f"{name:<20} no validation rows ({result.get('error') or 'see step logs'})")
        for r in result.get("attribution", []):
            best = r.get("best_no_acf") or {}
            floor = "-" if r.get("noise_floor") is None else f"{r['noise_floor']:.2%}"
            lines.append(f"{name:<20} {r['shape']:<6} {int(r['candidate_id']):>4} {x(r.get('speedup')):>8} "
                         f"{x(r.get('config_speedup')):>8} {x(r.get('acf_speedup')):>8} {floor:>7} "
                         f"{'yes' if r.get('significant') else 'no':>3} "
                         + (f"cand {best.get('candidate_id')} {x(best.get('speedup'))}" if best else "-"))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="output folder (created; must be empty)")
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=30, help="validate --rounds")
    parser.add_argument("--top", type=int, default=4, help="validate --top")
    parser.add_argument("--budget-s", type=float, default=240.0, help="wall-clock budget for all steps")
    args = parser.parse_args()
    if args.out.exists() and any(args.out.iterdir()):
        parser.error(f"--out {args.out}: not empty")
    args.out.mkdir(parents=True, exist_ok=True)
    budget = Budget(args.budget_s)
    summary: dict[str, Any] = {**facts(), "budget_s": args.budget_s, "campaigns": {}}
    cli = [sys.executable, "-m", "paretotune.cli"]
    env_note = {k: os.environ.get(k) for k in ("CIQ_SEARCH_SPACES_DIR", "PARETOTUNE_PTXAS")}
    summary["environment"] = env_note
    for name, doc in campaigns(args.generations).items():
        folder = args.out / name
        folder.mkdir()
        config = folder / "campaign.yaml"
        config.write_text(yaml.safe_dump(doc, sort_keys=False))
        run_dir = folder / "run"
        result: dict[str, Any] = {"campaign": str(config), "steps": []}
        summary["campaigns"][name] = result
        print(f"{name}:", flush=True)
        try:
            result["steps"].append(step("run", [*cli, "run", str(config), "--out", str(run_dir), "--quiet"],
                                        folder, budget, cap_s=150))
            if (run_dir / "results.jsonl").is_file():
                result["steps"].append(step("front", [*cli, "front", str(run_dir)], folder, budget, cap_s=30))
                chosen = choose(run_dir, args.top)
                result["validated"] = chosen
                result["steps"].append(step("validate", [*cli, "validate", str(run_dir), "--rounds",
                                                         str(args.rounds), "--candidates",
                                                         ",".join(map(str, chosen))], folder, budget, cap_s=120))
                result["steps"].append(step("report", [*cli, "report", str(run_dir)], folder, budget, cap_s=60))
            result["attribution"] = attribution_rows(run_dir)
        except Exception as exc:  # noqa: BLE001 - one campaign's failure is recorded; the next still runs
            result["error"] = f"{type(exc).__name__}: {exc}"
        (args.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    summary["wall_s"] = round(args.budget_s - budget.left(), 1)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    text = table(summary)
    (args.out / "table.txt").write_text(text + "\n")
    print("\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
