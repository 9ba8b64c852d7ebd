"""Helion's own search space for a bound kernel, as the project's Cartesian knob lists plus a constraint.

Helion's autotuner searches a *flat* list of fragments (``ConfigSpec.create_config_generation().flat_spec``):
one per block size, per loop option, per load's eviction policy, ... ``ConfigSpec.flat_key_layout()`` says
which config key each run of fragments belongs to. Here every config key becomes one knob whose values are
whole config values (``block_sizes: [[1], [2], ...]``, ``indexing: [[pointer, ...], ...]``): the product of
its fragments' search values, so a candidate's config is exactly a ``helion.Config`` dict (records, pins and
``kernel.space`` overrides all speak Helion's names). A key whose product exceeds :data:`MAX_VALUES` keeps a
seeded sample of that many values (always with Helion's default and the baselines).

Combinations Helion rejects are left out by :func:`accepts`: ``ConfigSpec.normalize`` must neither raise nor
change a value (a config it would rewrite is another point, not this one).

Multi-shape rule: a ConfigSpec depends on the shape, so a campaign over shapes searches the *intersection*
of the per-shape value lists (plus every shape's baseline values), and a config must be accepted by every
shape's ConfigSpec.

Codegen-only-on-a-GPU knobs: Helion offers ``tensor_descriptor`` indexing only when it sees a CUDA device of
capability >= 9. The ConfigSpec is built here without a GPU, so :func:`device_features` answers as the
campaign's target would (GPU campaigns: tensor descriptors on sm_90+) or restricts them (static CPU campaigns,
whose meta-tensor codegen cannot ask the device): the restriction is reported (:data:`CPU_RESTRICTION`).
"""
from __future__ import annotations

import contextlib
import itertools
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from paretotune.compat import helion as compat_helion

MAX_VALUES = 4096  # values kept per knob (a categorical choice over more than this is sampled)
CPU_RESTRICTION = ("static CPU campaign: Helion's tensor_descriptor indexing is left out of the searched space "
                   "(its codegen needs a GPU); baselines keep their own indexing")


@contextlib.contextmanager
def device_features(tensor_descriptors: bool) -> Iterator[None]:
    """Make Helion answer 'are TMA tensor descriptors available?' as the target would, without asking CUDA."""
    with compat_helion.tensor_descriptors(tensor_descriptors):
        yield


def _fragment_values(fragment: Any) -> list[Any]:
    """Every value Helion's autotuner may pick for one flat fragment (a ListOf gives whole lists)."""
    inner = getattr(fragment, "inner", None)
    if inner is not None and hasattr(fragment, "length"):  # ListOf: one value per list element
        options = _fragment_values(inner)
        return [list(p) for p in _capped_product([options] * int(fragment.length))]
    choices = getattr(fragment, "choices", None)
    if choices is not None:
        return list(getattr(fragment, "search_choices", None) or choices)
    values = fragment.search_values(MAX_VALUES)
    return list(values) if values is not None else _sampled_values(fragment)


def _sampled_values(fragment: Any) -> list[Any]:
    """A fragment Helion does not enumerate (a wide integer range, a permutation: ``search_values`` gives None)
    keeps its default and a seeded sample of Helion's own random draws, at most MAX_VALUES in all."""
    values = [fragment.default()]
    state = random.getstate()
    random.seed(0)  # Helion's fragments draw from the random module: the same sample on every machine
    try:
        for _ in range(MAX_VALUES * 4):
            value = fragment.random()
            if value not in values:
                values.append(value)
            if len(values) >= MAX_VALUES:
                break
    finally:
        random.setstate(state)
    return values


def _capped_product(options: Sequence[list[Any]], seed: int = 0) -> list[tuple[Any, ...]]:
    """The Cartesian product, or a seeded sample of MAX_VALUES of it (the first, all-first-option, kept)."""
    total = 1
    for o in options:
        total *= len(o)
    if total <= MAX_VALUES:
        return list(itertools.product(*options))
    rng = random.Random(seed)
    picked = {tuple(o[0] for o in options)}
    while len(picked) < MAX_VALUES:
        picked.add(tuple(rng.choice(o) for o in options))
    return sorted(picked, key=repr)


def derive_space(config_spec: Any) -> dict[str, list[Any]]:
    """Knob -> values for every key of Helion's default config that Helion's autotuner searches."""
    default = dict(config_spec.default_config().config)
    flat = list(config_spec.create_config_generation().flat_spec)
    space: dict[str, list[Any]] = {}
    i = 0
    for key, count, is_sequence in config_spec.flat_key_layout():
        fragments, i = flat[i:i + count], i + count
        if key not in default or count == 0:
            continue
        if is_sequence:
            values = [list(p) for p in _capped_product([_fragment_values(f) for f in fragments])]
        else:
            values = _fragment_values(fragments[0])
        space[key] = _with(values, [default[key]])
    for key, value in default.items():  # keys Helion fixes (not searched): one value
        space.setdefault(key, [value])
    return space


def _with(values: list[Any], extra: Sequence[Any]) -> list[Any]:
    out = list(values)
    for v in extra:
        if v not in out:
            out.append(v)
    return out


def intersect(spaces: Sequence[Mapping[str, list[Any]]],
              baselines: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """The multi-shape rule: knobs every shape has, values every shape allows, plus each baseline's values."""
    keys = [k for k in spaces[0] if all(k in s for s in spaces[1:])]
    out: dict[str, list[Any]] = {}
    for key in keys:
        values = [v for v in spaces[0][key] if all(v in s[key] for s in spaces[1:])]
        out[key] = _with(values, [b[key] for b in baselines if key in b])
    return out


def accepts(config_spec: Any, config: Mapping[str, Any]) -> bool:
    """Whether Helion takes ``config`` as it is: ``normalize`` neither raises nor rewrites a given value."""
    import copy

    trial = copy.deepcopy(dict(config))
    try:
        compat_helion.normalize(config_spec, trial, fix_invalid=False)
    except Exception:  # noqa: BLE001 - any rejection by Helion means "not a point of the space"
        return False
    return all(trial.get(k) == v for k, v in config.items())


def normalized(config_spec: Any, config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` completed the way Helion completes it (missing keys filled; invalid values fixed)."""
    import copy

    trial = copy.deepcopy(dict(config))
    compat_helion.normalize(config_spec, trial, fix_invalid=True)
    return trial
