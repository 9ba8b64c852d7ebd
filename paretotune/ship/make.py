"""``paretotune ship``: a validated run becomes the file the kernel's runtime loads.

For a Helion AOT kernel that is a new ``_helion_aot_<file>_cuda_sm90.py`` (:mod:`paretotune.ship.helion_heuristic`):
the kernel's current heuristic with the buckets that have a validated, re-checked winner changed
(:mod:`paretotune.pareto.buckets`), the ACFs beside it. For a Triton kernel it is a launch-options table keyed
like the kernel's autotuner key (:func:`ship_triton`). Everything is written into a temporary folder, checked
(the module imports, answers every campaign shape as decided, Helion takes every config it returns, each ACF
exists), and only then renamed to ``--out``: a refusal leaves nothing behind.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from paretotune.errors import UserError
from paretotune.ship.files import (SHIP_JSON, Shipped, ShipRequest, check_baselines, exec_index, header_lines,
                                   import_module, kernel_adapter, plain, ptxas_release, publish, stored_request,
                                   use_ptxas, validated)
from paretotune.records import Shape
from paretotune.front import open_run
from paretotune.store.run_dir import RunDir


@dataclass(frozen=True)
class ShapeBucket:
    """A campaign shape: the bucket the heuristic puts it in and the config it answers with (as returned)."""

    label: str
    bucket: Hashable
    old: dict[str, Any]


@dataclass(frozen=True)
class HelionView:
    """What ship needs of a Helion kernel, without the adapter's per-shape binds (seconds each): the kernel, its
    arguments for a shape (the campaign's factories), the heuristic file the baseline came from."""

    kernel: Any
    make_args: Callable[[Shape, str], tuple[Any, ...]]
    heuristic: Path | None


def helion_view(request: ShipRequest) -> HelionView | None:
    """The campaign's kernel as a :class:`HelionView`, or None for a kernel that is not a Helion one. Its code
    is imported in a child first, as ``run`` does (:func:`~paretotune.campaign.trial_import.trial_imports`)."""
    import sys

    from paretotune.campaign.trial_import import trial_imports
    from paretotune.campaign.user_code import add_program_path, check_files, import_object, named_code
    from paretotune.kernels.helion import HelionKernel, as_helion_kernel, import_helion
    from paretotune.kernels.helion_heuristic import find_heuristic

    spec = request.kernel
    where = f"{request.campaign_path}: kernel"
    module, program_path = request.captured
    add_program_path(program_path)
    codes = named_code(spec, request.campaign_path.parent, str(request.campaign_path), module)
    check_files(codes)
    trial_imports([c for c in codes if c.is_file or c.target not in sys.modules])
    obj = import_object(spec.source, request.campaign_path.parent, f"{where}.source", module=module)
    helion = import_helion()
    if spec.inputs is not None and isinstance(obj, helion.Kernel):
        factory = import_object(spec.inputs, request.campaign_path.parent, f"{where}.inputs")
        kernel, own = obj, None

        def make_args(shape: Shape, device: str) -> tuple[Any, ...]:
            return tuple(factory(shape.params, device, 0))
    elif isinstance(obj, HelionKernel):
        kernel = as_helion_kernel(obj.fn)
        own = obj.heuristic

        def make_args(shape: Shape, device: str) -> tuple[Any, ...]:
            return tuple(obj.args(obj.inputs(shape.params, device, 0), shape.params))
    else:
        return None
    named = spec.heuristic or own
    path = ((request.campaign_path.parent / named).resolve() if named
            else find_heuristic(kernel, request.target.capability))
    return HelionView(kernel, make_args, path)


def _ask(view: HelionView, shape: Shape, ask: Callable[[tuple[Any, ...]], Any]) -> Any:
    """``ask(args)`` with the shape's meta arguments, else CPU ones (some heuristics need real tensors)."""
    problem: Exception | None = None
    for device in ("meta", "cpu"):
        try:
            return ask(view.make_args(shape, device))
        except Exception as exc:  # noqa: BLE001 - try the next device; the last failure is reported
            problem = exc
    raise UserError(f"{view.heuristic}: shape {shape.label}: {type(problem).__name__}: "
                    f"{' '.join(str(problem).split())[:300]}")


def helion_buckets(request: ShipRequest, view: HelionView) -> tuple[bool, dict[str, ShapeBucket]]:
    """(whether the heuristic has ``key_<kernel>``, shape -> its bucket and old config) for the campaign's
    shapes, asked the way Helion asks (a user key flattened). Without a key function a bucket is the set of
    shapes the heuristic gives one config (Helion then keys its cache by every shape feature)."""
    from paretotune.kernels.helion_heuristic import heuristic_config, key_values, load

    if view.heuristic is None:
        raise UserError(f"{request.campaign_path}: kernel {view.kernel.name} has no AOT heuristic for "
                        f"sm_{request.target.capability} (ship writes one in Helion's format from the current one)")
    key_fn = getattr(load(view.heuristic), f"key_{view.kernel.name}", None)

    def bucket_of(args: tuple[Any, ...]) -> ShapeBucket:
        old = heuristic_config(view.kernel, view.heuristic, args)
        bucket = (key_fn(*key_values(view.kernel, args)) if callable(key_fn)
                  else json.dumps(old, sort_keys=True, default=repr))
        return ShapeBucket("", bucket, old)

    out = {}
    for shape in request.shapes:
        found = _ask(view, shape, bucket_of)
        out[shape.label] = ShapeBucket(shape.label, found.bucket, found.old)
    return callable(key_fn), out


# -- choosing and writing -------------------------------------------------------------------------------------


def _new_config(results: pd.DataFrame, cid: int, shapes: tuple[str, ...], old: dict[str, Any],
                stored: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """(the config to ship for the winner, its ACF sha) — an ACF-only winner (config ``{}`` or the shapes'
    baseline) keeps the old config exactly and adds the ACF."""
    row = results.set_index("candidate_id").loc[cid]
    config = json.loads(row["config"]) if isinstance(row["config"], str) else dict(row["config"])
    same = not config or all(config == stored.get(s) for s in shapes)
    return (dict(old) if same else config), (str(row["acf"]) if row["acf"] else None)


def _self_check(module_path: Path, view: HelionView, request: ShipRequest, shapes: dict[str, ShapeBucket],
                expect: dict[str, dict[str, Any]]) -> None:
    """Import the written module as Helion does and ask it for every campaign shape: the expected config (exactly
    the old one where unchanged), each ACF existing, and ``helion.Config`` taking it."""
    from paretotune.kernels.helion import import_helion
    from paretotune.kernels.helion_heuristic import key_values

    module = import_module(module_path)
    fn = getattr(module, f"autotune_{view.kernel.name}")
    not_ready = getattr(module, "_PARETOTUNE_NOT_READY", None)
    if not_ready:
        raise UserError(f"the shipped module would apply no ACF here: {not_ready}")
    by_label = {s.label: s for s in request.shapes}
    helion = import_helion()
    for label in shapes:
        got = _ask(view, by_label[label], lambda args: fn(*key_values(view.kernel, args)))
        got = dict(getattr(got, "config", got))
        if got != expect[label]:
            raise UserError(f"{module_path.name}: shape {label} gets {got!r}, expected {expect[label]!r}")
        acf = got.get("advanced_controls_file")
        if acf and not Path(acf).is_file():
            raise UserError(f"{module_path.name}: shape {label}: ACF {acf} does not exist")
        try:
            helion.Config(**got)
        except Exception as exc:  # noqa: BLE001 - Helion must take every config the file returns
            raise UserError(f"{module_path.name}: shape {label}: helion.Config refuses {got!r} "
                            f"({type(exc).__name__}: {exc})") from None


def ship_run(run_dir: Path, out: Path) -> Shipped:
    """Write the shipped heuristic (Helion) or launch table (Triton) for ``run_dir`` into ``out``."""
    run = open_run(run_dir)  # the integrity rule every reader applies
    out = Path(out)
    if " " in str(out.resolve()):
        raise UserError(f"--out {out}: the path has a space (Triton splits ptx_options on spaces, so no ACF in it "
                        "could be applied)")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"--out {out}: exists and is not an empty folder (ship writes only into a new one)")
    verdicts, rechecks = validated(run)
    use_ptxas(ptxas_release(run))
    request = stored_request(run)
    view = helion_view(request)
    if view is None:
        from paretotune.ship.triton_table import ship_triton

        return ship_triton(run, request, kernel_adapter(request), verdicts, rechecks, out)
    return _ship_helion(run, request, view, verdicts, rechecks, out)


def _ship_helion(run: RunDir, request: ShipRequest, view: HelionView, verdicts: pd.DataFrame,
                 rechecks: dict[tuple[int, str], dict[str, Any]], out: Path) -> Shipped:
    from paretotune.validate.recheck import passed
    from paretotune.kernels.helion_heuristic import expected_names
    from paretotune.ship.helion_heuristic import ACF_KEY, Change, literal_bucket, render
    from paretotune.ship.shipped_acfs import write_index
    from paretotune.pareto.buckets import choose

    release = ptxas_release(run)
    has_key, shapes = helion_buckets(request, view)
    check_baselines(run, request, {s: b.old for s, b in shapes.items()}, helion=True)
    path, name = view.heuristic, view.kernel.name
    assert path is not None
    choices = choose(verdicts, {s: b.bucket for s, b in shapes.items()}, rechecks, passed)
    stored = run.meta().get("kernel", {}).get("baselines", {})
    results = run.results()
    changes, new = [], {}
    for i, choice in enumerate(choices):
        if choice.winner is None:
            continue
        olds = [shapes[s].old for s in choice.shapes]
        why = ""
        if any(o != olds[0] for o in olds[1:]):
            why = "the heuristic gives its shapes different configs, so no one config can replace them"
        elif not literal_bucket(choice.bucket):
            why = f"its key {choice.bucket!r} cannot be written as a Python literal"
        if why:
            choices[i] = replace(choice, winner=None, reason=why)
            continue
        config, sha = _new_config(results, choice.winner, choice.shapes, olds[0], stored)
        acf = f"{sha}.acf" if sha and not choice.acf_left_out else None
        changes.append(Change(choice.bucket, olds[0], config, acf))
        new[choice.bucket] = (olds[0], config, acf)
    about = (f"Kernel {name}; the previous heuristic, {path.name}, is below verbatim (key_{name} and its dispatch "
             f"unchanged), then autotune_{name} answers the changed buckets.")
    header = header_lines(run, request, about, "the previous heuristic's config for the shape", choices, new,
                          release)
    file_name = expected_names(view.kernel, request.target.capability)[0]
    text = render(path.read_text(), name, has_key, changes, header, release)
    acfs = sorted({c.acf for c in changes if c.acf})

    def fill(tmp: Path) -> dict[str, Any]:
        (tmp / file_name).write_text(text)
        expect = {}
        for label, sb in shapes.items():
            change = new.get(sb.bucket)
            expect[label] = dict(sb.old) if change is None else {
                **change[1], **({ACF_KEY: os.path.join(str(tmp), "acf", change[2])} if change[2] else {})}
        _self_check(tmp / file_name, view, request, shapes, expect)
        write_index(tmp, [])  # even when empty: exec takes the folder for its Helion heuristic alone
        entries = exec_index(tmp, request, lambda: kernel_adapter(request), choices, new)
        summary = plain({**_summary(run, request, name, path, file_name, choices, new, shapes, release),
                         "exec_entries": entries})
        (tmp / SHIP_JSON).write_text(json.dumps(summary, indent=1))
        return summary

    summary = publish(out, acfs, run, fill)
    return Shipped(out=out, module=out / file_name, choices=choices, acfs=acfs, summary=summary)


def _summary(run: RunDir, request: ShipRequest, name: str, heuristic: Path, file_name: str, choices: list[Any],
             new: dict[Hashable, Any], shapes: dict[str, ShapeBucket], release: str) -> dict[str, Any]:
    """ship.json: what the header says, as data (the benchmark and the tests read it)."""
    return {"run_dir": str(run.path), "kernel": name, "module": file_name, "previous_heuristic": str(heuristic),
            "target": request.target.name, "ptxas_release": release,
            "shapes": {s: {"bucket": repr(b.bucket)} for s, b in shapes.items()},
            "buckets": [{"bucket": repr(c.bucket), "shapes": list(c.shapes), "winner": c.winner,
                         "reason": c.reason, "per_shape": c.per_shape, "recheck": c.recheck,
                         "acf_left_out": c.acf_left_out,
                         "old": new[c.bucket][0] if c.winner is not None else None,
                         "new": new[c.bucket][1] if c.winner is not None else None,
                         "acf": new[c.bucket][2] if c.winner is not None else None} for c in choices],
            "changed": sum(c.winner is not None for c in choices), "buckets_seen": len(choices)}


def per_bucket_candidates(run_dir: Path, per_bucket: int, limit: int = 64) -> tuple[list[int], dict[int, list[str]]]:
    """For ``validate --per-bucket N``: per bucket of the heuristic, the N candidates with the best search-time
    geomean speedup over the bucket's shapes (faster than the baseline on each of them), each to be measured on
    those shapes only. Returns (candidate ids, candidate -> shapes)."""
    run = open_run(run_dir)  # the integrity rule every reader applies
    request = stored_request(run)
    view = helion_view(request)
    if view is not None:
        buckets = {s: b.bucket for s, b in helion_buckets(request, view)[1].items()}
    else:
        buckets = {s.label: s.label for s in request.shapes}  # a Triton launch table: one entry per shape
    runtime = {c.shape: c.column for c in run.objective_columns() if c.objective == "runtime"}
    if len(runtime) != len(request.shapes):
        raise UserError(f"{run_dir}: --per-bucket ranks candidates by runtime, which this run did not measure on "
                        "every shape")
    return rank_per_bucket(run.results(), runtime, buckets, per_bucket, limit)


def _search_speedup(row: pd.Series, base: pd.Series, shape: str, column: str) -> float:
    """The candidate's search-time speedup on ``shape``: against the baseline timing next to it (the A/B ratio
    the GPU worker records in ``extra``), else against the baseline record."""
    extra = row.get("extra")
    try:
        ratio = (json.loads(extra) if isinstance(extra, str) else extra or {}).get(shape, {}).get("ratio_to_baseline")
    except (ValueError, AttributeError):
        ratio = None
    if isinstance(ratio, int | float) and ratio > 0:
        return 1.0 / float(ratio)
    return float(base[column]) / float(row[column])


def rank_per_bucket(results: pd.DataFrame, runtime: dict[str, str], buckets: dict[str, Hashable], per_bucket: int,
                    limit: int) -> tuple[list[int], dict[int, list[str]]]:
    """See :func:`per_bucket_candidates`; ``runtime``: shape -> its runtime column. Buckets with fewer winners
    pick first when ``limit`` cuts (each bucket keeps its best candidate before any gets a second)."""
    from paretotune.pareto.attribution import geomean
    from paretotune.pareto.table import is_ok

    base = results[results["is_baseline"].astype(bool)]
    if base.empty:
        raise UserError("the run has no baseline record")
    ok = results[is_ok(results) & ~results["is_baseline"].astype(bool)]
    groups: dict[Hashable, list[str]] = {}
    for shape, bucket in buckets.items():
        groups.setdefault(bucket, []).append(shape)
    ranked: list[list[int]] = []
    for shapes in groups.values():
        scored = []
        for _, row in ok.iterrows():
            speedups = [_search_speedup(row, base.iloc[0], s, runtime[s]) for s in shapes]
            if all(math.isfinite(v) and v > 1 for v in speedups):
                scored.append((geomean(speedups), min(speedups), -int(row["candidate_id"])))
        ranked.append([-neg for _g, _w, neg in sorted(scored, reverse=True)[:per_bucket]])
    shapes_of: dict[int, set[str]] = {}
    for rank in range(per_bucket):  # every bucket's best first, then every bucket's second...
        for shapes, best in zip(groups.values(), ranked):
            if rank < len(best) and (best[rank] in shapes_of or len(shapes_of) < limit):
                shapes_of.setdefault(best[rank], set()).update(shapes)
    return sorted(shapes_of), {c: sorted(v) for c, v in sorted(shapes_of.items())}
