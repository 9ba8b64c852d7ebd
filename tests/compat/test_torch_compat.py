"""torch's internals that :mod:`paretotune.compat.torch` relies on, pinned against the installed torch."""
from __future__ import annotations

import torch

from paretotune.compat import torch as compat_torch


def test_pytree_round_trips_a_nest_through_text() -> None:
    nest = {"a": (torch.ones(2), 3), "b": [torch.zeros(1)]}
    leaves, spec = compat_torch.tree_flatten(nest)
    assert len(leaves) == 3 and compat_torch.tree_leaves(nest)[1] == 3
    again = compat_torch.tree_unflatten(leaves, compat_torch.treespec_loads(compat_torch.treespec_dumps(spec)))
    assert again["a"][1] == 3 and torch.equal(again["b"][0], torch.zeros(1))
    doubled = compat_torch.tree_map(lambda x: x * 2, nest)
    assert doubled["a"][1] == 6


def test_a_profile_gives_raw_kineto_records_with_correlation_ids() -> None:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch.ones(3).add_(1)
    events = compat_torch.kineto_events(prof)
    assert events and all(callable(getattr(e, n)) for e in events for n in (
        "name", "start_ns", "correlation_id", "linked_correlation_id", "device_type"))
