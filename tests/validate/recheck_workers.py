"""Stand-in re-check workers for tests/validate/test_recheck.py: spawned by ``run_jobs`` like the real one, they
report progress the same way but do no GPU work (only the standard library is imported, so they start fast).
What each job does is named in the job itself: ``do`` = ``ok``, ``hang`` or ``crash``."""
from __future__ import annotations

import json
import os
import time
from typing import Any


def worker(label: str, jobs: list[dict[str, Any]], progress: str) -> None:
    with open(progress, "a", encoding="utf-8") as out:
        def say(event: dict[str, Any]) -> None:
            out.write(json.dumps(event) + "\n")
            out.flush()

        for job in jobs:
            key = f"{job['candidate_id']}@{job['shape']}"
            say({"start": key})
            if job["do"] == "hang":
                time.sleep(600)
            if job["do"] == "crash":
                os._exit(3)
            say({"done": key, "result": {"run": 2, "passed": 2, "bit_identical": True, "failures": [],
                                         "reference": label, "pid": os.getpid()}})


def broken_setup(label: str, jobs: list[dict[str, Any]], progress: str) -> None:
    with open(progress, "a", encoding="utf-8") as out:
        out.write(json.dumps({"error": "UserError: the kernel does not import"}) + "\n")
    raise SystemExit(1)
