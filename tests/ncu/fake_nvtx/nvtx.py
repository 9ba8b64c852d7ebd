"""A stand-in for the ``nvtx`` package that fake_ncu.py puts first on the child's path.

Instead of talking to a profiler it appends push/pop events to ``$FAKE_NCU_EVENTS``, so fake_ncu.py can tell
which launches happened inside which ranges, the way ncu's NVTX filter does.
"""
from __future__ import annotations

import json
import os


def _event(**fields: object) -> None:
    path = os.environ.get("FAKE_NCU_EVENTS")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(fields) + "\n")


def push_range(message=None, color=None, domain=None, category=None, payload=None):
    _event(event="push", name=message, domain=domain)


def pop_range(domain=None):
    _event(event="pop", domain=domain)
