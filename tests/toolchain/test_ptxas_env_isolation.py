"""The conftest fixture keeps one test's ptxas out of the next: the first test here leaves a stand-in path in
Triton's variables, as an in-process ``paretotune run`` with a stand-in does; the second must not see it."""
from __future__ import annotations

import os

STAND_IN = "/nonexistent/ptxas-stand-in"
NAMES = ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH", "PARETOTUNE_PTXAS")


def test_a_run_leaves_a_stand_in_behind() -> None:
    for name in NAMES:
        os.environ[name] = STAND_IN


def test_the_next_test_does_not_see_it() -> None:
    assert [os.environ.get(name) for name in NAMES].count(STAND_IN) == 0
