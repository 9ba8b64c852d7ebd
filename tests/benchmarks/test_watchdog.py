"""The head-to-head survives a peer that hangs or overruns: its arm is killed at its budget plus a grace and
recorded as such (benchmarks/common.py, used by bench_time_to_quality.py)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

COMMON = Path(__file__).resolve().parents[2] / "benchmarks" / "common.py"


@pytest.fixture(scope="module")
def common() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_common", COMMON)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def fake_tool(body: str) -> list[str]:
    return [sys.executable, "-c", "import json, sys, time\n" + body]


def test_a_tool_that_hangs_is_cut_by_the_watchdog_and_recorded_as_hung(common: ModuleType, monkeypatch) -> None:
    monkeypatch.setattr(common, "STALLED_S", 1.0)
    # starts, says one thing, then waits for ever (a candidate that never finishes), with a child of its own
    cmd = fake_tool("import subprocess\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
                    "print('autotune started', flush=True)\ntime.sleep(600)\n")
    start = time.monotonic()
    out = common.run_with_watchdog(cmd, budget_s=1.0, grace_s=1.5)
    assert time.monotonic() - start < 10  # not the 600 s it would have waited
    assert out.outcome == "hung" and out.stalled_s >= 1.0
    row = out.as_row()
    assert row["watchdog"] == "hung" and row["error"].startswith("hung: killed by the watchdog after")
    assert "autotune started" in row["log_tail"]
    left = subprocess.run(["pgrep", "-f", "time.sleep(600)"], capture_output=True, text=True).stdout.split()
    assert left == []  # the whole process group went, the tool's own child too


def test_a_tool_still_working_past_its_budget_is_recorded_as_overran(common: ModuleType) -> None:
    cmd = fake_tool("while True:\n    print('config tried', flush=True)\n    time.sleep(0.2)\n")
    out = common.run_with_watchdog(cmd, budget_s=0.5, grace_s=1.0)
    assert out.outcome == "overran" and out.as_row()["error"].startswith("overran: ")


def test_a_tool_that_finishes_in_time_keeps_its_result(common: ModuleType) -> None:
    cmd = fake_tool("print('noise'); print('TTQ_RESULT ' + json.dumps({'winner_config': {'a': 1}}))\n")
    out = common.run_with_watchdog(cmd, budget_s=30.0)
    assert out.outcome == "finished" and out.returncode == 0
    assert out.as_row()["winner_config"] == {"a": 1} and "error" not in out.as_row()
