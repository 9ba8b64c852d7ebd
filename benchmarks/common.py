"""What several benchmark scripts share: running another tool's arm in a child under a watchdog.

A head-to-head must survive a peer that hangs or overruns (Helion's autotuner hung on a sampled ACF until an
outer timeout killed it, and overran a 108 s budget to 243 s on layer_norm): its arm runs in a child process
group, is killed at its budget plus a short grace, and the outcome says so instead of the benchmark waiting.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

RESULT_PREFIX = "TTQ_RESULT "  # the line a child prints with its JSON result
GRACE_S = 15.0  # past its budget an arm may still be closing (writing its result); longer is an overrun
STALLED_S = 20.0  # a child killed with no sign of progress for this long had hung, not overrun


@dataclass
class ChildOutcome:
    """How a watched child ended: ``finished`` (exited by itself), ``overran`` (killed past its budget while it
    was still making progress) or ``hung`` (killed after :data:`STALLED_S` or more without any); its result,
    output tail and seconds, and the seconds it had been stalled when it was killed."""

    outcome: str
    wall_s: float
    returncode: int | None
    result: dict[str, Any] = field(default_factory=dict)
    log_tail: str = ""
    stalled_s: float = 0.0

    def as_row(self) -> dict[str, Any]:
        row = {**self.result, "watchdog": self.outcome, "process_wall_s": round(self.wall_s, 3),
               "returncode": self.returncode}
        if self.outcome != "finished":
            row["error"] = (f"{self.outcome}: killed by the watchdog after {self.wall_s:.0f} s (budget plus "
                            f"{GRACE_S:g} s grace; no progress for the last {self.stalled_s:.0f} s)"
                            + (f"; {row['error']}" if "error" in row else ""))
        if not self.result:
            row["log_tail"] = self.log_tail
        return row


def run_with_watchdog(cmd: list[str], budget_s: float, env: dict[str, str] | None = None,
                      grace_s: float = GRACE_S, progress: Any = None) -> ChildOutcome:
    """Run ``cmd`` in its own process group; kill the whole group at ``budget_s + grace_s``. The child's stdout and
    stderr go to a temporary file (never a pipe that could fill and stall it); its last ``RESULT_PREFIX`` line
    is its result. Progress is its output growing, or the value of ``progress()`` (e.g. the rows of its log
    file) changing, read about twice a second; a killed child that made none for :data:`STALLED_S` had hung."""
    import tempfile

    start = time.monotonic()
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True, env=env,
                                start_new_session=True)
        killed, seen, moved_at = False, None, start
        while proc.poll() is None:
            now_seen = (os.fstat(log.fileno()).st_size, progress() if progress is not None else None)
            if now_seen != seen:
                seen, moved_at = now_seen, time.monotonic()
            if time.monotonic() - start > budget_s + grace_s:
                _kill_group(proc)
                killed = True
                break
            time.sleep(0.5)
        proc.wait()
        wall = time.monotonic() - start
        log.seek(0)
        text = log.read()
    found = [line for line in text.splitlines() if line.startswith(RESULT_PREFIX)]
    result = json.loads(found[-1][len(RESULT_PREFIX):]) if found else {}
    if not killed:
        return ChildOutcome("finished", wall, proc.returncode, result, text[-1500:])
    stalled = time.monotonic() - moved_at
    return ChildOutcome("hung" if stalled >= STALLED_S else "overran", wall, proc.returncode, result, text[-1500:],
                        stalled_s=stalled)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the child's whole process group (a tool's own workers with it)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
