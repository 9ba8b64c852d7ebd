"""ptxas stand-ins: scripts that answer ``--version`` (and every non-ACF build) with the real ptxas 13.3 and
misbehave only when asked to apply an ACF.

Why only ACF builds: Triton calls the same ptxas (``TRITON_PTXAS_PATH``) to build its own no-ACF cubin while
making the PTX, so a stand-in that broke every call would break the baseline and every candidate alike, which
tests nothing. Keyed on ``--apply-controls``, the fault hits exactly the candidates whose ACF it targets.

Each ACF is given a behaviour the first time it is seen, from a schedule (``ok``, ``hang``, ``crash``,
``garbage``, ``kill-worker``), and keeps it on every later call (a retried candidate misbehaves again). The
assignment is written to ``<state>/assigned.json``, so a test knows which candidates it hit.
"""
from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

SCRIPT = '''\
#!{python} -S
import fcntl, json, os, resource, signal, sys, time
REAL = {real!r}
STATE = {state!r}
SCHEDULE = {schedule!r}
args = sys.argv[1:]
if "--apply-controls" not in args:
    os.execv(REAL, [REAL, *args])
sha = os.path.basename(args[args.index("--apply-controls") + 1]).rsplit(".", 1)[0]
with open(os.path.join(STATE, "lock"), "a+") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    path = os.path.join(STATE, "assigned.json")
    assigned = json.load(open(path)) if os.path.exists(path) else {{}}
    if sha not in assigned:
        n = len(assigned)
        assigned[sha] = SCHEDULE[n] if n < len(SCHEDULE) else "ok"
        with open(path + ".tmp", "w") as fh:
            json.dump(assigned, fh)
        os.replace(path + ".tmp", path)
    behaviour = assigned[sha]
with open(os.path.join(STATE, "calls.log"), "a") as log:
    log.write(sha + " " + behaviour + "\\n")
if behaviour == "hang":
    time.sleep(3600)
elif behaviour == "crash":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.kill(os.getpid(), signal.SIGSEGV)
elif behaviour == "garbage":
    sys.stdout.write("\\x1b[31m#### ptxas?? \\u00af\\\\_(\\u30c4)_/\\u00af\\n" + os.urandom(48).hex() + "\\n")
    sys.exit(0)
elif behaviour == "kill-worker":
    os.kill(os.getppid(), signal.SIGKILL)  # the worker process that ran us: like the OOM killer
    sys.exit(1)
os.execv(REAL, [REAL, *args])
'''


def write_standin(folder: Path, real: Path, schedule: list[str]) -> tuple[Path, Path]:
    """The stand-in executable and its state folder."""
    state = folder / "standin-state"
    state.mkdir(parents=True)
    exe = folder / "ptxas"
    exe.write_text(SCRIPT.format(python=sys.executable, real=str(real), state=str(state), schedule=schedule))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return exe, state


def assigned(state: Path) -> dict[str, str]:
    path = state / "assigned.json"
    return json.loads(path.read_text()) if path.exists() else {}


def version_only(folder: Path, version_line: str) -> Path:
    """A 'ptxas' whose ``--version`` prints ``version_line`` (too old, or not ptxas at all)."""
    exe = folder / "ptxas"
    exe.write_text(f"#!/bin/sh\necho 'ptxas: NVIDIA (R) Ptx optimizing assembler'\necho '{version_line}'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return exe
