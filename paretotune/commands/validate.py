"""Re-measure the front (or chosen candidates) against the baseline and judge each with statistics.

Besides the verdicts it prints, per shape, the control's noise floor (or, when the control differs from the
baseline, the one line that says why nothing is pinned), and each candidate's attribution: total vs the
baseline, config-only (its config without ACF) and ACF-only (with vs without its ACF), plus the best no-ACF
config the search recorded.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is loaded when the command runs: --help answers at once
    import pandas as pd


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--candidates", type=lambda s: [int(x) for x in s.split(",")],
                        help="comma-separated candidate ids (default: the ranked front, best first)")
    parser.add_argument("--top", type=int, default=6, help="at most this many front candidates (default 6)")
    parser.add_argument("--rounds", type=int, default=30, help="interleaved rounds (samples per arm)")
    parser.add_argument("--rep-ms", type=float, default=50.0, help="do_bench rep per sample (ms)")
    parser.add_argument("--warmup-ms", type=float, default=10.0)
    parser.add_argument("--alpha", type=float, default=0.01)
    parser.add_argument("--min-effect", type=float, default=0.5)
    parser.add_argument("--max-control-bias", type=float, metavar="F",
                        help="a control that differs from the baseline by at most F (its CI's far end, e.g. 0.005) "
                             "sets the shape's noise floor instead of voiding it (default 0.005; 0: any difference "
                             "voids the shape)")
    parser.add_argument("--json", action="store_true", help="print the verdicts as JSON instead of a table")
    parser.add_argument("--per-bucket", type=int, metavar="N",
                        help="for `paretotune ship`: per bucket of the kernel's heuristic, the N candidates the search "
                             "found fastest on its shapes, each measured on those shapes only")


def main(args: argparse.Namespace) -> int:
    from paretotune.validate.validation import require_gpu_to_validate, validate_run
    from paretotune.front import open_run

    run = open_run(args.run_dir)  # a damaged or wrong folder is named first: it needs fixing on any machine
    if args.max_control_bias is not None and not 0 <= args.max_control_bias < 1:
        from paretotune.errors import UserError

        raise UserError(f"--max-control-bias: must be in [0, 1) (a fraction, e.g. 0.005), got {args.max_control_bias}")
    require_gpu_to_validate(run, "paretotune validate (it re-measures runtimes)")  # then, before any measuring
    candidates, shapes_of = args.candidates, None
    if args.per_bucket is not None:
        from paretotune.errors import UserError
        from paretotune.ship.make import per_bucket_candidates

        if args.candidates is not None or args.per_bucket < 1:
            raise UserError("--per-bucket N takes N >= 1 and no --candidates (it chooses them)")
        candidates, shapes_of = per_bucket_candidates(args.run_dir, args.per_bucket)
    result = validate_run(args.run_dir, candidates=candidates, top=args.top, rounds=args.rounds,
                          rep_ms=args.rep_ms, warmup_ms=args.warmup_ms, alpha=args.alpha,
                          min_effect=args.min_effect, shapes_of=shapes_of, max_control_bias=args.max_control_bias)
    if args.json:
        print(verdicts_json(result.verdicts, args.run_dir, result.controls))
        return 0
    print(f"{SPEEDUP_TEXT}\n")
    print(render(result.verdicts, result.controls, result.best_no_acf, result.ceilings, result.how_timed))
    if result.unreliable:
        for shape, reason in result.unreliable.items():
            print(f"UNRELIABLE {shape}: {reason}; no artifacts written")
    if result.recheck is not None:
        print(recheck_line(result.recheck, args.run_dir))
    print(f"\nverdicts: {args.run_dir / 'validation.csv'}; artifacts: "
          + (f"{args.run_dir / 'artifacts'} ({len(result.artifacts)} files)" if result.artifacts else "none"))
    return 0


def recheck_line(recheck: dict[str, Any], run_dir: Path) -> str:
    """'re-check: 5 of 6 winner-shapes passed every check (4 bit-identical to their twin); recheck.json'."""
    from paretotune.validate.recheck import passed

    checks = recheck.get("checks", [])
    ok = [c for c in checks if passed(c)]
    same = sum(bool(c.get("bit_identical")) for c in ok)
    bad = [f"cand {c['candidate_id']} on {c['shape']}: {(c.get('failures') or ['failed'])[0]}"
           for c in checks if not passed(c)]
    return (f"\nre-check on fresh inputs: {len(ok)} of {len(checks)} winner-shapes passed every check ({same} "
            f"bit-identical to their twin); {run_dir / 'recheck.json'}" + "".join(f"\n  FAILED {b}" for b in bad))


def render(verdicts: pd.DataFrame, controls: dict[str, Any], best_no_acf: dict[str, dict[str, Any]],
           ceilings: dict[str, dict[str, Any]] | None = None,
           how_timed: dict[str, dict[str, Any]] | None = None) -> str:
    """The verdict table, then per shape the noise floor, the three-ratio attribution, the copy ceiling, and the
    GPU activities of one timed call where there are more than the kernel's own."""
    from paretotune.records import work_text
    from paretotune.validate.ceilings import ceiling_line

    cols = ["shape", "candidate_id", "role", "speedup", "ci_low", "ci_high", "cohens_d", "p_holm", "significant",
            "of_copy", "failed"]
    lines = [verdicts[[c for c in cols if c in verdicts.columns]].to_string(index=False)]
    for shape, control in controls.items():
        lines += ["", f"shape {shape}:"]
        if control["reliable"]:
            biased = ", a significant bias within the bound" if control.get("biased") else ""
            lines.append(f"  noise floor: control {control['speedup']:.4f}x, deviation {control['deviation']:.2%} "
                         f"(CI {control['deviation_low']:.2%}..{control['floor']:.2%}{biased}); winners need CI low > "
                         f"{1 + control['floor']:.4f}")
        else:
            lines.append(f"  unreliable: {control['reason']}")
        rows = verdicts[(verdicts["shape"] == shape) & (verdicts["role"] == "candidate")]
        for _, r in rows.iterrows():
            lines.append("  " + attribution_line(r))
        best = best_no_acf.get(shape)
        if best:
            config = " ".join(f"{k}={v}" for k, v in best["config"].items())
            lines.append(f"  best no-ACF config in the search: candidate {best['candidate_id']} ({config}), "
                         f"{best['column']} {_x(best['speedup'])} vs baseline (search record)")
        if ceilings and shape in ceilings:
            lines.append("  " + ceiling_line(ceilings[shape], _closest_to_copy(rows)))
        work = work_text((how_timed or {}).get(shape, {}).get("gpu_work") or [])
        if work:
            lines.append("  " + work)
    return "\n".join(lines)


def _closest_to_copy(rows: pd.DataFrame) -> tuple[int, float] | None:
    """(candidate id, fraction of the copy ceiling) of the shape's candidate nearest the ceiling, if measured."""
    if "of_copy" not in rows or not rows["of_copy"].notna().any():
        return None
    best = rows.loc[rows["of_copy"].idxmax()]
    return int(best["candidate_id"]), float(best["of_copy"])


def attribution_line(r: pd.Series) -> str:
    """'cand 7: total 1.222x [..] p=.. = config-only 1.201x [..] p=.. x ACF-only 1.017x [..] p=..'."""
    total = f"cand {int(r['candidate_id'])}: total {_ratio(r, 'speedup', 'ci_low', 'ci_high', 'p_holm')}"
    if not math.isfinite(float(r.get("speedup", math.nan))):
        return f"cand {int(r['candidate_id'])}: not measured ({r.get('failed', '')})"
    if not math.isfinite(float(r.get("twin_id", math.nan))):
        why = "it has no ACF" if not isinstance(r.get("acf"), str) or not r.get("acf") else "no twin measured"
        return total + f"; no ACF share ({why})"
    config = _ratio(r, "config_speedup", "config_ci_low", "config_ci_high", "config_p_holm")
    acf = _ratio(r, "acf_speedup", "acf_ci_low", "acf_ci_high", "acf_p_holm")
    shown = r.get("acf_significant")  # False: ship leaves the ACF out where the config alone also wins
    note = "; the ACF not shown to help" if isinstance(shown, bool) and not shown else ""  # NaN: no twin
    return f"{total} = config-only {config} (twin {int(r['twin_id'])}) x ACF-only {acf}{note}"


def _ratio(r: pd.Series, point: str, low: str, high: str, p: str) -> str:
    return f"{_x(r[point])} [{_x(r[low])}, {_x(r[high])}] p={float(r[p]):.2g}"


def _x(value: Any) -> str:
    value = float(value)
    return f"{value:.3f}x" if math.isfinite(value) else "n/a"


SPEEDUP_TEXT = ("speedup = mean baseline runtime / mean candidate runtime (> 1 is faster; ci_low..ci_high its "
                "bootstrap interval); runtimes measured in ms")


def verdicts_json(table: pd.DataFrame, run_dir: Path, controls: dict[str, Any] | None = None) -> str:
    """The verdict table (and the per-shape controls) as one JSON document; non-finite numbers become null."""
    rows = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v.item() if hasattr(v, "item") else v)
             for k, v in row.items()} for row in table.to_dict(orient="records")]
    return json.dumps({"run_dir": str(run_dir), "convention": SPEEDUP_TEXT, "unit": "ms",
                       "verdicts_csv": str(run_dir / "validation.csv"), "artifacts": str(run_dir / "artifacts"),
                       "verdicts": rows, "controls": _plain(controls or {})}, indent=2, allow_nan=False, default=str)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    return None if isinstance(value, float) and not math.isfinite(value) else value
