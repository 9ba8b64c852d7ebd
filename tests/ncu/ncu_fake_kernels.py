"""Fake launch factories for the CPU tests: each "launch" appends a kernel event for fake_ncu.py to report.

params: ``values`` (metric -> number the fake ncu reports), ``kernels`` (launches per call, default 1), and
one failure at most: ``raise_in`` = "build" | "warmup" | "measure" (a Python exception: the child goes on),
``sticky_in`` (a CUDA-poisoning RuntimeError: the child exits 3), ``abort_in`` (the process dies),
``hang_in`` (sleeps 60 s). Call 1 is the warm-up, call 2 the measured launch (the child's warmup=1).
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any


def _event(**fields: Any) -> None:
    with open(os.environ["FAKE_NCU_EVENTS"], "a") as f:
        f.write(json.dumps(fields) + "\n")


def make_launch(params: dict[str, Any]) -> Callable[[], None]:
    if params.get("raise_in") == "build":
        raise ValueError("triton.compiler.errors.CompilationError: fake compile error")
    calls = {"n": 0}

    def launch() -> None:
        calls["n"] += 1
        phase = "warmup" if calls["n"] == 1 else "measure"
        if params.get("raise_in") == phase:
            raise ValueError(f"fake error in {phase}")
        if params.get("sticky_in") == phase:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        if params.get("abort_in") == phase:
            os.abort()
        if params.get("hang_in") == phase:
            time.sleep(60)
        for _ in range(int(params.get("kernels", 1))):
            _event(event="launch", kernel=params.get("kernel", "_fake_kernel"), values=params.get("values", {}))

    return launch
