"""Validation of a run's winners: choose candidates, re-measure in a fresh process, judge, write artifacts."""
from __future__ import annotations

import json
import multiprocessing
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from paretotune.errors import UserError
from paretotune.execution.validate_worker import CONTROL_ID, validate_in_process
from paretotune.store.run_dir import RunDir


def choose_candidates(run: RunDir, top: int) -> list[int]:
    """Best first: the all-shapes selection (multi-shape runs), then the rest of the ranked front."""
    from paretotune.pareto import rank_fronts, select_all_shapes

    results = run.results()
    columns = run.objective_columns()
    ids: list[int] = []
    if len({c.shape for c in columns}) > 1:
        ids += [int(c) for c in select_all_shapes(results, columns)["candidate_id"]]
    front = rank_fronts(results, run.directions()).front(0)
    ids += [int(c) for c, b in zip(front["candidate_id"], front["is_baseline"]) if not b and int(c) not in ids]
    return ids[:top]


def run_validation(run_dir: Path, *, candidates: list[int] | None, top: int, rounds: int, rep_ms: float,
                   warmup_ms: float, alpha: float, min_effect: float) -> pd.DataFrame:
    from paretotune.pareto.stats import Thresholds, validate_front
    from paretotune.toolchain.ptxas import find_ptxas

    run = RunDir(run_dir)
    meta = run.meta()
    results = run.results()
    ids = candidates if candidates is not None else choose_candidates(run, top)
    known = set(results["candidate_id"].astype(int))
    missing = [i for i in ids if i not in known]
    if missing:
        raise UserError(f"{run_dir}: --candidates: no candidate(s) {missing} in this run")
    rows = results.set_index("candidate_id").loc[ids]
    chosen = [{"candidate_id": int(cid), "config": json.loads(r["config"]),
               "acf_path": str(run.acf_path(r["acf"])) if r["acf"] else None} for cid, r in rows.iterrows()]
    ptxas = find_ptxas()
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:  # a fresh process: no state from the search
        measured = pool.submit(validate_in_process, meta["campaign_path"], run.campaign_text(), str(ptxas.path),
                               ptxas.version, chosen, rounds, warmup_ms, rep_ms, int(meta.get("seed", 0))).result()
    thresholds = Thresholds(alpha=alpha, min_effect=min_effect)
    tables = []
    for shape, data in measured.items():
        samples = data["samples"]
        arms = {int(k): v for k, v in samples.items() if k != "baseline"}
        table = validate_front(samples["baseline"], arms, direction="min", thresholds=thresholds)
        table.insert(0, "shape", shape)
        table["role"] = ["control" if c == CONTROL_ID else "candidate" for c in table["candidate_id"]]
        for cid, err in data["errors"].items():
            table.loc[len(table)] = {"shape": shape, "candidate_id": int(cid), "significant": False,
                                     "failed": f"re-check failed: {err}", "role": "candidate"}
        tables.append(table)
    verdicts = pd.concat(tables, ignore_index=True)
    verdicts.to_csv(run.path / "validation.csv", index=False)
    (run.path / "validation.json").write_text(json.dumps({
        "rounds": rounds, "rep_ms": rep_ms, "warmup_ms": warmup_ms, "alpha": alpha, "min_effect": min_effect,
        "samples": measured}, indent=1, default=str))
    write_artifacts(run, verdicts, chosen)
    return verdicts


def winners(verdicts: pd.DataFrame) -> list[int]:
    """Candidates judged significant on every shape."""
    cands = verdicts[verdicts["role"] == "candidate"]
    ok = cands.groupby("candidate_id")["significant"].all()
    return [int(c) for c in ok[ok].index]


def write_artifacts(run: RunDir, verdicts: pd.DataFrame, chosen: list[dict[str, Any]]) -> list[Path]:
    """For each validated winner: its .acf and a snippet that pins config + ACF for shipping."""
    from paretotune.campaign.load import campaign_from_text

    out_dir = run.path / "artifacts"
    out_dir.mkdir(exist_ok=True)
    campaign = campaign_from_text(run.campaign_text(), Path(run.meta()["campaign_path"]))
    by_id = {c["candidate_id"]: c for c in chosen}
    written = []
    for cid in winners(verdicts):
        cand = by_id[cid]
        speedups = verdicts[(verdicts["candidate_id"] == cid)].set_index("shape")["speedup"].to_dict()
        acf_name = None
        if cand["acf_path"]:
            acf_name = f"cand{cid}_{Path(cand['acf_path']).stem[:12]}.acf"
            shutil.copyfile(cand["acf_path"], out_dir / acf_name)
            written.append(out_dir / acf_name)
        snippet = out_dir / f"cand{cid}_pin.py"
        snippet.write_text(pin_snippet(campaign.spec.kernel.source, cand["config"], acf_name, speedups))
        written.append(snippet)
    return written


def pin_snippet(source: str, config: dict[str, Any], acf_name: str | None, speedups: dict[str, float]) -> str:
    """Python that reproduces the winner: a helion.Config or Triton launch options with the ACF pinned."""
    gains = ", ".join(f"{s}: {v:.3f}x" for s, v in speedups.items())
    acf_line = f'ACF = str(Path(__file__).with_name("{acf_name}"))' if acf_name else 'ACF = ""  # compiler defaults'
    header = (f"# Pinned by paretotune: validated speedup vs the default build ({gains}).\n"
              f"# Kernel spec: {source}. The ACF needs ptxas 13.3: set TRITON_PTXAS_PATH (and\n"
              f"# TRITON_PTXAS_BLACKWELL_PATH) to it before importing triton.\n"
              f"from pathlib import Path\n\n{acf_line}\n")
    launch = {k: v for k, v in config.items() if k in ("num_warps", "num_stages", "num_ctas", "maxnreg")}
    consts = {k: v for k, v in config.items() if k not in launch}
    if any(k in config for k in ("block_sizes", "indexing", "reduction_loops", "pid_type")):
        return header + ("import helion\n\nCONFIG = helion.Config(**" + repr(config) +
                         ", advanced_controls_file=ACF)\n# use: helion.kernel(config=CONFIG, static_shapes=True)(fn)\n")
    opts = ", ".join([f"{k}={v!r}" for k, v in {**consts, **launch}.items()] +
                     (['ptx_options=f"--apply-controls {ACF}"'] if acf_name else []))
    return header + f"LAUNCH_KWARGS = dict({opts})\n# use: kernel[grid](*args, **LAUNCH_KWARGS)\n"
