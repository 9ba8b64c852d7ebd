"""The pool spawns its workers in a thread while the campaign process goes on (and forks the trial import): what
the first spawn imports lazily is imported before that thread starts, so a fork can never happen while the thread
holds a module's import lock that the forked child might then wait on for good."""
from __future__ import annotations

import subprocess
import sys

CHILD = """
import os, sys, threading
from paretotune.build.pool import WorkerPool
seen = []
real = threading.Thread.start
def start(self):
    if self.name == "pool-start":
        seen.append("multiprocessing.popen_forkserver" in sys.modules)
    return real(self)
threading.Thread.start = start
pool = WorkerPool(os.getpid, os.getpid, (), 1, 60.0)
pool.start()
pool.close()
print(seen)
"""


def test_the_spawn_path_is_imported_before_the_spawning_thread_starts() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.split("\n")[-2] == "[True]", done.stdout + done.stderr[-2000:]
