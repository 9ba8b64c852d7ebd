"""Entry point of a campaign process: die with the server, then become the CLI as usual.

``python -m paretotune.service.child SERVER_PID run CONFIG --out RUN --resume --quiet``. PR_SET_PDEATHSIG is
set here rather than in a ``preexec_fn`` (unsafe in a threaded server). It fires when the server's
scheduler thread, which starts every campaign process, ends: with the server, SIGKILL included. If the
server died before the signal was armed, the process exits at once; the next server resumes the campaign.
The process then execs ``python -m paretotune ARGS`` (same process, same parent: the signal stays armed), so
the service runs the public command line without importing it (the CLI is the layer above the service).
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys


def die_with_parent(server: int) -> bool:
    """Arm PR_SET_PDEATHSIG (SIGKILL); False if the server already died (then exit at once)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the next server's recover() kills what is left
    return os.getppid() == server


def main(argv: list[str]) -> int:
    if not die_with_parent(int(argv[0])):
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "paretotune", *argv[1:]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
