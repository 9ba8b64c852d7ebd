"""The processes a run starts, and how none of them outlives it.

Every process a run starts belongs to a process group that is killed on every way out:

- the trial import's child (:mod:`paretotune.campaign.trial_import`) leads its own group, killed when the
  import ends, fails or times out, and by the child itself when the campaign process dies;
- each pool worker (:mod:`paretotune.build.pool`) leads its own group (what the kernel's import or ptxas
  starts in it joins it), killed when the pool is killed or closed, and by the worker when the campaign
  process dies;
- what the campaign process itself starts (a kernel that forks at import in the CLI's own import) is reaped
  by :func:`reaping_children` around ``run`` and ``resume``: the CLI becomes a child subreaper (Linux), so a
  descendant whose parent died is handed to it, and every child but multiprocessing's own helpers is killed
  when the command ends; SIGTERM becomes a KeyboardInterrupt there, so that way out is an ordinary unwind.

Without this, a kernel file that forks sleeping children at import leaves processes behind for minutes (its
children, the fork server, the resource tracker, the children forked in pool workers), and a caller reading the
CLI's stdout waits for them. Linux-only parts (``/proc``, ``prctl``) do nothing elsewhere.
"""
from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37


def process_table() -> list[tuple[int, str, int, int, int]]:
    """(pid, state, parent pid, process group, session) of every process, from /proc (``stat``'s fields after
    the command name, which may itself hold spaces and parentheses)."""
    rows = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        rows.append((int(entry.name), fields[0], int(fields[1]), int(fields[2]), int(fields[3])))
    return rows


def group_members(pgid: int, *, zombies: bool = True) -> list[int]:
    """Processes of process group ``pgid``; zombies too unless told (one not yet reaped still holds its pid and
    group id)."""
    return [pid for pid, state, _, group, _ in process_table() if group == pgid and (zombies or state != "Z")]


def kill_group(pgid: int | None, sig: int = signal.SIGKILL, wait_s: float = 0.0) -> None:
    """Signal process group ``pgid`` if any of it is left; with ``wait_s``, wait that long for its members to go.
    Call it while the group's leader is alive or not yet reaped where possible: a group id cannot be reused
    while the group has a member."""
    if pgid is None or pgid <= 1 or (Path("/proc").is_dir() and not group_members(pgid)):
        return
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + wait_s
    while wait_s and time.monotonic() < deadline and group_members(pgid):
        time.sleep(0.05)


def lead_own_group() -> None:
    """Make this process the leader of a new process group (a forked child: the trial import, a pool worker),
    so that everything it starts can be killed with it."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)


def kill_own_group_when_closed(fd: int) -> None:
    """In a thread: when ``fd`` (the read end of a pipe only the campaign process writes to, or a parent
    sentinel) reaches end of file, the campaign process is gone: kill this process's whole group."""
    def watch() -> None:
        select.select([fd], [], [])  # readable at end of file: nothing ever writes to it
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


def children(pid: int | None = None, *, zombies: bool = False) -> list[int]:
    """The child processes of ``pid`` (default: this process); zombies only if asked."""
    pid = os.getpid() if pid is None else pid
    return [child for child, state, parent, _, _ in process_table() if parent == pid and (zombies or state != "Z")]


def _multiprocessing_helpers() -> set[int]:
    """multiprocessing's fork server and resource tracker: they end by themselves when this process exits
    (killing the tracker first would cost it the clean-up it does then)."""
    helpers = set()
    fs = sys.modules.get("multiprocessing.forkserver")
    rt = sys.modules.get("multiprocessing.resource_tracker")
    for module, holder, attr in ((fs, "_forkserver", "_forkserver_pid"), (rt, "_resource_tracker", "_pid")):
        pid = getattr(getattr(module, holder, None), attr, None)
        if isinstance(pid, int):
            helpers.add(pid)
    return helpers


def reap_children(keep: Iterable[int] = ()) -> None:
    """Kill every child of this process but ``keep`` and multiprocessing's helpers, then reap it; again while
    more come (a subreaper is handed the children of the ones it kills)."""
    spared = set(keep) | _multiprocessing_helpers()
    for _ in range(50):
        strays = [pid for pid in children() if pid not in spared]
        if not strays:
            break
        for pid in strays:
            kill_group(pid)  # a child that leads a group takes it along; pid and group go together here
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for pid in strays:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)
    for pid in set(children(zombies=True)) - spared:  # zombies handed over as a subreaper (never a helper's)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _subreaper(on: bool | None) -> bool | None:
    """Set whether this process is a child subreaper (None: leave it); return what it was (None: unknown)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        was = ctypes.c_int(0)
        if libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0) != 0:
            return None
        if on is not None:
            libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
        return bool(was.value)
    except (OSError, AttributeError):
        return None


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def reaping_children() -> Iterator[None]:
    """Around a CLI command that runs a campaign: orphaned descendants come to this process, SIGTERM unwinds
    it like Ctrl-C, and on the way out, whichever it is, every child it did not have before is killed."""
    before = set(children(zombies=True))
    was_subreaper = _subreaper(True)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        reap_children(before)
        if was_subreaper is False:
            _subreaper(False)


def thread_only_progress_lock() -> None:
    """In a worker that may be killed (a hung build, the wall clock): give tqdm a thread lock before it makes its
    default, a multiprocessing lock (torch.fx's interpreter opens a progress bar while Helion compiles). That lock
    is a named semaphore a killed worker never removes, and Python's resource tracker warns of each one as the
    campaign ends ("leaked semaphore objects"). A worker's bars are never shown; its threads are all it has."""
    try:
        from tqdm import tqdm
    except ImportError:
        return
    tqdm.set_lock(threading.RLock())
