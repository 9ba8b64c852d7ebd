"""``paretotune ship`` for a Triton kernel: a launch-options table (:mod:`paretotune.ship.triton_module`).

Its buckets are the kernel's autotuner key values per campaign shape (``@triton.autotune(key=[...])``), or the
shape's sizes for a plain ``@triton.jit`` kernel; the same rule decides them (:mod:`paretotune.pareto.buckets`).
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from paretotune.errors import UserError
from paretotune.ship.files import ShipRequest
from paretotune.store.run_dir import RunDir

SCALAR = (int, float, str, bool)


def key_of(adapter: Any, shape: Any) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """(key names, key values) of ``shape``: the autotuner's ``key`` arguments, else the shape's sizes."""
    inner = getattr(adapter, "inner", adapter)
    tuner = inner.parts.autotuner
    names = tuple(getattr(tuner, "keys", None) or ()) if tuner is not None else ()
    if not names:
        names = tuple(shape.params)
        values = tuple(shape.params[k] for k in names)
    else:
        named = inner.named_args(inner.make_inputs(shape, "meta", 0), shape, adapter.default_config(shape))
        values = tuple(named.get(k) for k in names)
    bad = [n for n, v in zip(names, values) if not isinstance(v, SCALAR)]
    if bad:
        raise UserError(f"kernel {inner.name}: key argument {bad[0]!r} is not a number or string for shape "
                        f"{shape.label}, so it cannot key a launch table")
    return names, values


def ship_triton(run: RunDir, request: ShipRequest, adapter: Any, verdicts: pd.DataFrame,
                rechecks: dict[tuple[int, str], dict[str, Any]], out: Path) -> Any:
    from paretotune.validate.recheck import passed
    from paretotune.ship.files import (SHIP_JSON, Shipped, check_baselines, exec_index, header_lines,
                                       import_module, plain, ptxas_release, publish)
    from paretotune.ship.triton_module import Entry, render
    from paretotune.pareto.buckets import choose
    from paretotune.search.space import flatten_config

    release = ptxas_release(run)
    keys, names = {}, ()
    for shape in request.shapes:
        names, keys[shape.label] = key_of(adapter, shape)
    previous = {s.label: flatten_config(adapter.default_config(s)) for s in request.shapes}
    check_baselines(run, request, previous, helion=False)
    choices = choose(verdicts, keys, rechecks, passed)
    results = run.results().set_index("candidate_id")
    entries, new = [], {}
    for i, choice in enumerate(choices):
        before = [previous[s] for s in choice.shapes]
        if any(b != before[0] for b in before[1:]):
            if choice.winner is not None:
                choices[i] = replace(choice, winner=None, reason="its shapes ran different baseline configs")
            entries.append(Entry(choice.bucket, before[0], None, None))
            continue
        if choices[i].winner is None:
            entries.append(Entry(choice.bucket, before[0], None, None))
            continue
        row = results.loc[choice.winner]
        config = json.loads(row["config"]) if isinstance(row["config"], str) else dict(row["config"])
        config = flatten_config(config) if config else dict(before[0])
        acf = f"{row['acf']}.acf" if row["acf"] and not choice.acf_left_out else None
        entries.append(Entry(choice.bucket, before[0], config, acf))
        new[choice.bucket] = (before[0], config, acf)
    name = getattr(adapter, "inner", adapter).parts.jit.__name__
    about = (f"Kernel {name}: a launch-options table keyed by {', '.join(names)}; call kernel[grid](*args, "
             "**launch_kwargs(*key)) (for an @triton.autotune kernel its .fn: triton.Config carries no ptx_options).")
    header = header_lines(run, request, about, "the campaign's baseline config for the shape", choices, new, release)
    text = render(names, entries, header, release)
    file_name = f"{name}_launch.py"
    acfs = sorted({e.acf for e in entries if e.acf})

    def fill(tmp: Path) -> dict[str, Any]:
        (tmp / file_name).write_text(text)
        module = import_module(tmp / file_name)
        if getattr(module, "_PARETOTUNE_NOT_READY", None):
            raise UserError(f"the shipped table would apply no ACF here: {module._PARETOTUNE_NOT_READY}")
        for shape in request.shapes:
            got = module.launch_kwargs(*keys[shape.label])
            change = new.get(keys[shape.label])
            want = dict(previous[shape.label]) if change is None else dict(change[1])
            if change is not None and change[2]:
                want["ptx_options"] = f"--apply-controls {tmp / 'acf' / change[2]}"
            if got != want:
                raise UserError(f"{file_name}: shape {shape.label} gets {got!r}, expected {want!r}")
        exec_entries = exec_index(tmp, request, lambda: adapter, choices, new)
        summary = plain({"run_dir": str(run.path), "kernel": name, "module": file_name, "key": list(names),
                         "exec_entries": exec_entries,
                         "ptxas_release": release, "changed": len(new), "buckets_seen": len(choices),
                         "buckets": [{"bucket": repr(c.bucket), "shapes": list(c.shapes), "winner": c.winner,
                                      "reason": c.reason, "per_shape": c.per_shape, "recheck": c.recheck,
                                      "acf_left_out": c.acf_left_out}
                                     for c in choices]})
        (tmp / SHIP_JSON).write_text(json.dumps(summary, indent=1))
        return summary

    summary = publish(out, acfs, run, fill)
    return Shipped(out=out, module=out / file_name, choices=choices, acfs=acfs, summary=summary)

