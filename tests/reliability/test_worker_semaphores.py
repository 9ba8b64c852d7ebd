"""A worker killed at a limit leaves no named semaphore behind: tqdm (whose bar torch.fx's interpreter opens while
Helion compiles) would otherwise make a multiprocessing lock in it, and Python's resource tracker warns of every
such semaphore when the campaign ends ("There appear to be 2 leaked semaphore objects")."""
from __future__ import annotations

import subprocess
import sys

import pytest

# a fresh interpreter with the workers' start method: every semaphore made is registered with the tracker
CHILD = """
import io, multiprocessing
from multiprocessing import resource_tracker
multiprocessing.set_start_method("forkserver")
made = []
real = resource_tracker.register
resource_tracker.register = lambda name, rtype: (made.append(rtype), real(name, rtype))
{prepare}
from tqdm import tqdm
list(tqdm(range(3), file=io.StringIO()))
print(len(made))
"""


@pytest.mark.parametrize(("prepare", "semaphores"), [
    ("", 1),  # tqdm's default lock: what a killed worker leaked
    ("from paretotune.processes import thread_only_progress_lock; thread_only_progress_lock()", 0)],
    ids=["tqdm-default", "worker"])
def test_a_workers_progress_bars_make_no_named_semaphore(prepare: str, semaphores: int) -> None:
    pytest.importorskip("tqdm")
    done = subprocess.run([sys.executable, "-c", CHILD.format(prepare=prepare)], capture_output=True, text=True,
                          timeout=120, check=True)
    assert int(done.stdout.split()[-1]) == semaphores
