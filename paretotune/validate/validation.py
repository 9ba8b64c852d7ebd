"""Validation of a run's winners: choose candidates, re-measure in a fresh process, judge, write artifacts.

Every chosen candidate with an ACF is measured beside its no-ACF twin (the same config, compiler defaults),
so each shape reports three ratios: total (candidate vs baseline), config-only (twin vs baseline) and
ACF-only (candidate vs twin). The baseline-vs-baseline control gates each shape two-sided
(:func:`paretotune.pareto.stats.judge_control`): a shape whose control differs (by more than a bounded bias) is
unreliable, its verdicts are void and no artifact is written; a reliable control's noise floor raises the
winners' CI bar.
"""
from __future__ import annotations

import json
import math
import multiprocessing
import shutil
from concurrent.futures import ProcessPoolExecutor
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from paretotune.errors import UserError
from paretotune.records import HOW_TIMED, baseline_phrase
from paretotune.validate.ceilings import add_bandwidth
from paretotune.validate.worker import CONTROL_ID, validate_in_process
from paretotune.front import open_run
from paretotune.store.run_dir import RunDir


def require_gpu_to_validate(run: RunDir, what: str) -> None:
    """One line before any work when no GPU is visible, saying what this run needs: a static run's
    objectives are exact and its kernels never ran (nothing to re-measure here, outputs never checked); a
    runtime run was measured on a GPU and is validated on one."""
    from paretotune.measure.gpu_check import require_gpu
    from paretotune.objectives.registry import OBJECTIVES

    names = list(dict.fromkeys(c.objective for c in run.objective_columns()))
    static = all(n in OBJECTIVES and OBJECTIVES[n].stage == "static" for n in names)
    instead = (f"this run's objectives ({', '.join(names)}) are static: exact from the build, nothing to "
               "re-measure, and no kernel ran, so no output was checked; validate it on a GPU machine to time its "
               "front against the baseline and check the outputs" if static else
               "validate it on a machine with the GPU it was measured on")
    require_gpu(what, instead=instead)


def choose_candidates(run: RunDir, top: int) -> list[int]:
    """Best first: the all-shapes selection (multi-shape runs), then the rest of front 0 in the order ``front``
    shows it (the knee first; of equal points the simplest build first)."""
    from paretotune.pareto import rank_fronts, select_all_shapes
    from paretotune.pareto.choose import baseline_config, knee_order
    from paretotune.pareto.table import baseline_row

    results = run.results()
    columns = run.objective_columns()
    ids: list[int] = []
    if len({c.shape for c in columns}) > 1:
        ids += [int(c) for c in select_all_shapes(results, columns)["candidate_id"]]
    front = rank_fronts(results, run.directions()).front(0)
    if len(front):
        front = knee_order(front, run.directions(), baseline_config=baseline_config(
            baseline_row(results, run.directions())))
    ids += [int(c) for c, b in zip(front["candidate_id"], front["is_baseline"]) if not b and int(c) not in ids]
    return ids[:top]


FIRST_TWIN_ARM = -2  # twin arms with no search record are numbered -2, -3, ... (-1 is the control)
ATTRIBUTION_COLUMNS = ["twin_id", "config_speedup", "config_ci_low", "config_ci_high", "config_p_holm",
                       "acf_speedup", "acf_ci_low", "acf_ci_high", "acf_p_holm", "acf_significant"]


@dataclass(frozen=True)
class Validation:
    """What one ``paretotune validate`` found: the verdict table and what gates and explains it."""

    verdicts: pd.DataFrame
    controls: dict[str, Any]  # shape -> ControlCheck as a dict
    best_no_acf: dict[str, dict[str, Any]]  # shape -> best no-ACF record of the search
    artifacts: list[Path] = field(default_factory=list)
    recheck: dict[str, Any] | None = None  # recheck.json: each winner-shape re-checked against its twin, or None
    ceilings: dict[str, dict[str, Any]] = field(default_factory=dict)  # shape -> copy ceiling, baseline beside it
    how_timed: dict[str, dict[str, Any]] = field(default_factory=dict)  # shape -> its clock, why, one call's GPU work

    @property
    def unreliable(self) -> dict[str, str]:
        """shape -> the one-line reason its control failed."""
        return {s: c["reason"] for s, c in self.controls.items() if not c["reliable"]}


def twin_arms(chosen: list[dict[str, Any]], results: pd.DataFrame, default_config: dict[str, Any]
              ) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """The extra no-ACF arms to measure, and candidate id -> the arm id of its twin.

    A twin of the default config is the control arm (the same build); a twin the search recorded keeps that
    record's id; any other is numbered from :data:`FIRST_TWIN_ARM` down.
    """
    from paretotune.pareto.attribution import config_key, twin_ids

    recorded = twin_ids(results)
    chosen_keys = {c["candidate_id"] for c in chosen}
    arms: list[dict[str, Any]] = []
    arm_of_config: dict[str, int] = {config_key(default_config): CONTROL_ID}
    twin_of: dict[int, int] = {}
    for cand in chosen:
        if not cand["acf_path"]:
            continue
        key = config_key(cand["config"])
        if key not in arm_of_config:
            arm_id = recorded.get(key, FIRST_TWIN_ARM - sum(a["candidate_id"] < 0 for a in arms))
            arm_of_config[key] = arm_id
            if arm_id not in chosen_keys:  # a chosen no-ACF candidate is measured already
                arms.append({"candidate_id": arm_id, "config": cand["config"], "acf_path": None})
        twin_of[cand["candidate_id"]] = arm_of_config[key]
    return arms, twin_of


def run_validation(run_dir: Path, *, candidates: list[int] | None, top: int, rounds: int, rep_ms: float,
                   warmup_ms: float, alpha: float, min_effect: float) -> pd.DataFrame:
    """The verdict table (see :func:`validate_run` for the whole result)."""
    return validate_run(run_dir, candidates=candidates, top=top, rounds=rounds, rep_ms=rep_ms,
                        warmup_ms=warmup_ms, alpha=alpha, min_effect=min_effect).verdicts


Measure = Callable[[RunDir, list[dict[str, Any]], int, float, float], dict[str, Any]]
# (run, jobs: {candidate_id, shape, config, acf_path}) -> what recheck.json holds (validate/recheck.py)
Recheck = Callable[[RunDir, list[dict[str, Any]]], dict[str, Any]]
RECHECK_FILE = "recheck.json"


def measure_in_fresh_process(run: RunDir, arms: list[dict[str, Any]], rounds: int, warmup_ms: float,
                             rep_ms: float) -> dict[str, Any]:
    """{shape: {"samples": {arm: [ms, ...]}, "errors": {...}}} from a spawned process: no state from the search."""
    from paretotune.toolchain.ptxas import find_ptxas

    meta = run.meta()
    ptxas = find_ptxas()
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        return pool.submit(validate_in_process, meta["campaign_path"], run.campaign_text(), str(ptxas.path),
                           ptxas.version, arms, rounds, warmup_ms, rep_ms, int(meta.get("seed", 0))).result()


def validate_run(run_dir: Path, *, candidates: list[int] | None, top: int, rounds: int, rep_ms: float,
                 warmup_ms: float, alpha: float, min_effect: float,
                 measure: Measure = measure_in_fresh_process, shapes_of: dict[int, list[str]] | None = None,
                 recheck: Recheck | None | str = "auto", max_control_bias: float | None = None) -> Validation:
    """Choose, measure (``measure``: the GPU, in a fresh process), gate, judge, attribute, re-check the winners,
    write the files. ``shapes_of``: candidate id -> the only shapes to measure it on (``--per-bucket``).
    ``recheck``: how each winner is re-checked on each shape it won (``auto``: in fresh GPU processes when
    ``measure`` is the GPU's, else not at all; the run then has no ``recheck.json`` and ships nothing)."""
    from paretotune.pareto.attribution import best_without_acf
    from paretotune.pareto.stats import MAX_CONTROL_BIAS

    run = open_run(run_dir)  # a damaged run is refused before anything is measured
    results = run.results()
    ids = candidates if candidates is not None else choose_candidates(run, top)
    known = set(results["candidate_id"].astype(int))
    missing = [i for i in ids if i not in known]
    if missing:
        raise UserError(f"{run_dir}: --candidates: no candidate(s) {missing} in this run")
    rows = results.set_index("candidate_id").loc[ids]
    chosen = [{"candidate_id": int(cid), "config": json.loads(r["config"]),
               "acf_path": str(run.acf_path(r["acf"])) if r["acf"] else None} for cid, r in rows.iterrows()]
    for cand in chosen:
        if shapes_of and cand["candidate_id"] in shapes_of:
            cand["shapes"] = list(shapes_of[cand["candidate_id"]])
    base = results[results["is_baseline"].astype(bool)]
    default_config = json.loads(base.iloc[0]["config"]) if len(base) else {}
    extra_arms, twin_of = twin_arms(chosen, results, default_config)
    for arm in extra_arms:  # a twin is measured where the candidates it is the twin of are
        mine = [c for c in chosen if twin_of.get(c["candidate_id"]) == arm["candidate_id"]]
        if mine and all(c.get("shapes") is not None for c in mine):
            arm["shapes"] = sorted({s for c in mine for s in c["shapes"]})
    measured = measure(run, chosen + extra_arms, rounds, warmup_ms, rep_ms)
    twin_ids = {a["candidate_id"] for a in extra_arms}
    bound = MAX_CONTROL_BIAS if max_control_bias is None else max_control_bias
    verdicts, controls = judge_measured(measured, twin_of, twin_ids, alpha=alpha, min_effect=min_effect,
                                        max_control_bias=bound)
    ceilings = add_bandwidth(verdicts, measured)
    how_timed = {shape: {k: data[k] for k in HOW_TIMED if data.get(k)} for shape, data in measured.items()}
    acf_of = {c["candidate_id"]: Path(c["acf_path"]).stem if c["acf_path"] else "" for c in chosen}
    verdicts["acf"] = [acf_of.get(int(c), "") for c in verdicts["candidate_id"]]  # "": compiler defaults
    best = best_without_acf(results, run.objective_columns())
    (run.path / RECHECK_FILE).unlink(missing_ok=True)  # a re-check belongs to the verdicts it re-checked
    verdicts.to_csv(run.path / "validation.csv", index=False)
    (run.path / "validation.json").write_text(json.dumps({
        "rounds": rounds, "rep_ms": rep_ms, "warmup_ms": warmup_ms, "alpha": alpha, "min_effect": min_effect,
        "max_control_bias": bound, "controls": controls, "ceilings": ceilings, "how_timed": how_timed,
        "twin_of": {str(k): v for k, v in twin_of.items()},
        "best_no_acf": best,
        "verdicts": json.loads(verdicts.to_json(orient="records")), "samples": measured}, indent=1, default=str))
    checked = recheck_winners(run, verdicts, chosen, measure, recheck)
    result = Validation(verdicts=verdicts, controls=controls, best_no_acf=best, recheck=checked, ceilings=ceilings,
                        how_timed=how_timed)
    if result.unreliable:  # a control that differs voids every verdict: pin nothing
        return result
    return replace(result, artifacts=write_artifacts(run, verdicts, chosen))


def recheck_jobs(verdicts: pd.DataFrame, chosen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One job per (candidate, shape) it won: significant there, on a shape whose control was reliable."""
    by_id = {c["candidate_id"]: c for c in chosen}
    won = verdicts[(verdicts["role"] == "candidate") & verdicts["significant"].fillna(False).astype(bool)
                   & verdicts["reliable"].fillna(False).astype(bool)]
    return [{"candidate_id": int(cid), "shape": str(shape), "config": by_id[int(cid)]["config"],
             "acf_path": by_id[int(cid)]["acf_path"]}
            for cid, shape in zip(won["candidate_id"], won["shape"]) if int(cid) in by_id]


def recheck_winners(run: RunDir, verdicts: pd.DataFrame, chosen: list[dict[str, Any]], measure: Measure,
                    recheck: Recheck | None | str) -> dict[str, Any] | None:
    """Re-check every winner-shape (``recheck``; see :func:`validate_run`) and write ``recheck.json``, which
    names the verdict file it belongs to (its sha256), so that ``ship`` never pairs it with other verdicts."""
    import hashlib

    if recheck == "auto":
        recheck = _recheck_on_gpu if measure is measure_in_fresh_process else None
    if recheck is None or isinstance(recheck, str):
        return None
    jobs = recheck_jobs(verdicts, chosen)
    done = recheck(run, jobs) if jobs else {"checks": []}
    done["validation_sha256"] = hashlib.sha256((run.path / "validation.csv").read_bytes()).hexdigest()
    (run.path / RECHECK_FILE).write_text(json.dumps(done, indent=1, default=str))
    return done


def _recheck_on_gpu(run: RunDir, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    from paretotune.validate.recheck import recheck_in_fresh_processes

    return recheck_in_fresh_processes(run, jobs)


def judge_measured(measured: dict[str, Any], twin_of: dict[int, int], twin_ids: set[int], *, alpha: float,
                   min_effect: float, max_control_bias: float | None = None
                   ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per shape: gate on the control, judge every arm against the baseline (Holm over the shape's arms,
    the noise floor added to the CI bar), and attribute each ACF candidate's speedup against its twin."""
    from paretotune.pareto.stats import Thresholds, judge_control, validate_front

    tables, controls = [], {}
    bias = {} if max_control_bias is None else {"max_control_bias": max_control_bias}  # None: Thresholds' default
    for shape, data in measured.items():
        samples = data["samples"]
        arms = {int(k): v for k, v in samples.items() if k != "baseline"}
        control = judge_control(samples["baseline"], arms[CONTROL_ID],
                                thresholds=Thresholds(alpha=alpha, min_effect=min_effect, **bias))
        controls[shape] = asdict(control)
        floor = control.floor if control.reliable and math.isfinite(control.floor) else 0.0
        thresholds = Thresholds(alpha=alpha, min_effect=min_effect, noise_floor=floor)
        table = validate_front(samples["baseline"], arms, direction="min", thresholds=thresholds)
        table.insert(0, "shape", shape)
        table["role"] = ["control" if c == CONTROL_ID else "twin" if c in twin_ids else "candidate"
                         for c in table["candidate_id"]]
        is_control = table["role"] == "control"
        # the control row: "significant" means flagged (it differs from the baseline, either way)
        table.loc[is_control, "significant"] = not control.reliable
        table.loc[is_control, "failed"] = control.reason
        table["reliable"] = control.reliable
        table["noise_floor"] = floor if control.reliable else np.nan
        if not control.reliable:
            table.loc[~is_control, "significant"] = False
            table.loc[~is_control, "failed"] = "unreliable: the control differs from the baseline"
        _attribute(table, samples, twin_of, thresholds)
        for cid, err in data["errors"].items():
            table.loc[len(table)] = {"shape": shape, "candidate_id": int(cid), "significant": False,
                                     "failed": f"re-check failed: {err}",
                                     "role": "twin" if int(cid) in twin_ids else "candidate",
                                     "reliable": control.reliable}
        tables.append(table)
    return pd.concat(tables, ignore_index=True), controls


def _attribute(table: pd.DataFrame, samples: dict[str, Any], twin_of: dict[int, int], thresholds: Any) -> None:
    """Fill the config-only and ACF-only columns of each candidate whose twin was measured (in place).

    Config-only is the twin's own row (judged against the baseline with the shape's other arms); ACF-only is
    a Welch test of candidate against twin, Holm-adjusted over the shape's candidates, and ``acf_significant``
    says whether that share clears the thresholds a winner must (p, effect size, CI low above 1 + the noise
    floor): whether the ACF is shown to help at all, which decides whether ship keeps it."""
    from paretotune.pareto.stats import compare, holm

    for name in ATTRIBUTION_COLUMNS:
        table[name] = np.nan
    by_id = table.set_index("candidate_id")
    rows, raw, verdicts = [], [], []
    for i, cid in zip(table.index, table["candidate_id"]):
        twin = twin_of.get(int(cid))
        if table.at[i, "role"] != "candidate" or twin is None or str(twin) not in samples or twin not in by_id.index:
            continue
        verdict = compare(samples[str(twin)], samples[str(int(cid))], direction="min", thresholds=thresholds)
        t = by_id.loc[twin]
        table.loc[i, ATTRIBUTION_COLUMNS[:5]] = [twin, t["speedup"], t["ci_low"], t["ci_high"], t["p_holm"]]
        table.loc[i, ["acf_speedup", "acf_ci_low", "acf_ci_high"]] = [verdict.speedup, verdict.ci_low,
                                                                      verdict.ci_high]
        rows.append(i)
        raw.append(verdict.p_value)
        verdicts.append(verdict)
    if rows:
        adjusted = holm(raw)
        table.loc[rows, "acf_p_holm"] = adjusted
        need = thresholds.min_speedup_low + thresholds.noise_floor
        table["acf_significant"] = table["acf_significant"].astype(object)
        table.loc[rows, "acf_significant"] = [bool(p < thresholds.alpha and v.cohens_d > thresholds.min_effect
                                                   and v.ci_low > need) for p, v in zip(adjusted, verdicts)]


def winners(verdicts: pd.DataFrame) -> list[int]:
    """Candidates judged significant on every shape (never on a shape whose control was unreliable)."""
    if "reliable" in verdicts and not verdicts["reliable"].fillna(False).astype(bool).all():
        return []
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
        mine = verdicts[(verdicts["candidate_id"] == cid)].set_index("shape")
        speedups = mine["speedup"].to_dict()
        acf_shares = mine["acf_speedup"].to_dict() if "acf_speedup" in mine else {}
        acf_name = None
        if cand["acf_path"]:
            acf_name = f"cand{cid}_{Path(cand['acf_path']).stem[:12]}.acf"
            shutil.copyfile(cand["acf_path"], out_dir / acf_name)
            written.append(out_dir / acf_name)
        snippet = out_dir / f"cand{cid}_pin.py"
        kernel_meta = run.meta().get("kernel", {})
        per_shape = kernel_meta.get("baselines") if not cand["config"] else None
        baseline = baseline_phrase(kernel_meta.get("baseline_sources", {}), [s.label for s in campaign.shapes])
        snippet.write_text(pin_snippet(campaign.spec.kernel.source, cand["config"], acf_name, speedups,
                                       acf_shares, per_shape=per_shape, baseline=baseline,
                                       static_shapes=kernel_meta.get("static_shapes")))
        written.append(snippet)
    return written


def _static_line(static_shapes: bool | None) -> str:
    if static_shapes is None:
        return ("STATIC_SHAPES = None  # not recorded by this run: set the kernel's own static_shapes (Helion's AOT "
                "kernels ship False); the same config generates other code under the other setting\n")
    return f"STATIC_SHAPES = {static_shapes!r}  # the kernel's own setting, as measured\n"


def acf_share_text(shares: dict[str, float], has_acf: bool) -> str:
    """'ACF: +1.7 % over the same config without it' (per shape when several), or why there is no share."""
    if not has_acf:
        return "ACF: none (compiler defaults), so no ACF share"
    known = {s: v for s, v in shares.items() if isinstance(v, float) and math.isfinite(v)}
    if not known:
        return "ACF: share not measured (no twin arm)"
    parts = [f"{(v - 1) * 100:+.1f} %" + (f" ({s})" if len(known) > 1 else "") for s, v in known.items()]
    return "ACF: " + ", ".join(parts) + " over the same config without it"


def pin_snippet(source: str, config: dict[str, Any], acf_name: str | None, speedups: dict[str, float],
                acf_shares: dict[str, float] | None = None, per_shape: dict[str, dict[str, Any]] | None = None,
                baseline: str = "the kernel's default config", static_shapes: bool | None = True) -> str:
    """Python that reproduces the winner: a helion.Config or Triton launch options with the ACF pinned.
    ``per_shape``: the winner's config is ``{}`` (each shape at its own baseline config): one Config per shape.
    ``baseline`` names what the speedups are over (the AOT heuristic's config, the spec's default, ...).
    ``static_shapes``: the Helion kernel's own setting, as it was measured; the snippet says to keep it (None: a
    run older than that record; the snippet says so rather than guess)."""
    gains = ", ".join(f"{s}: {v:.3f}x" for s, v in speedups.items())
    acf_line = f'ACF = str(Path(__file__).with_name("{acf_name}"))' if acf_name else 'ACF = ""  # compiler defaults'
    header = (f"# Pinned by paretotune: validated speedup vs the baseline, {baseline}, no ACF ({gains}).\n"
              f"# {acf_share_text(acf_shares or {}, acf_name is not None)}.\n"
              f"# Kernel spec: {source}. The ACF needs ptxas 13.3: set TRITON_PTXAS_PATH (and\n"
              f"# TRITON_PTXAS_BLACKWELL_PATH) to it before importing triton.\n"
              f"from pathlib import Path\n\n{acf_line}\n")
    if per_shape:
        body = "".join(f"    {label!r}: helion.Config(**{cfg!r}, advanced_controls_file=ACF),\n"
                       for label, cfg in per_shape.items())
        return header + ("import helion\n\n# each shape at its own baseline config (the kernel's AOT heuristic), "
                         "with the ACF\nCONFIGS = {\n" + body + "}\n" + _static_line(static_shapes))
    launch = {k: v for k, v in config.items() if k in ("num_warps", "num_stages", "num_ctas", "maxnreg")}
    consts = {k: v for k, v in config.items() if k not in launch}
    if any(k in config for k in ("block_sizes", "indexing", "reduction_loops", "pid_type")):
        return header + ("import helion\n\nCONFIG = helion.Config(**" + repr(config) + ", advanced_controls_file=ACF)\n"
                         + _static_line(static_shapes)
                         + "# use: helion.kernel(config=CONFIG, static_shapes=STATIC_SHAPES)(fn)\n")
    opts = ", ".join([f"{k}={v!r}" for k, v in {**consts, **launch}.items()] +
                     (['ptx_options=f"--apply-controls {ACF}"'] if acf_name else []))
    return header + f"LAUNCH_KWARGS = dict({opts})\n# use: kernel[grid](*args, **LAUNCH_KWARGS)\n"
