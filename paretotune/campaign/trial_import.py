"""Import a campaign's kernel code once in a forked child first, so that what user code does at import time
cannot end or hang the campaign process: ``sys.exit(3)``, ``os._exit(0)``, an endless loop or an exception
become one-line errors naming the file. Only then does the caller import it for real (workers import it
normally, as before).

A fork, not a spawn: the child starts with the parent's modules (torch and Triton are imported first), so the
trial costs about what the user's own module costs to import, not another interpreter start-up.
"""
from __future__ import annotations

import contextlib
import faulthandler
import importlib
import importlib.util
import os
import select
import sys
import time
from pathlib import Path
from typing import Any

from paretotune.campaign.kernel_file import load_file
from paretotune.errors import UserError
from paretotune.processes import kill_group, kill_own_group_when_closed, lead_own_group

DEFAULT_TIMEOUT_S = 120.0  # importing Helion on a busy 2-core machine takes tens of seconds
TIMEOUT_ENV = "PARETOTUNE_IMPORT_TIMEOUT_S"


def timeout_s() -> float:
    raw = os.environ.get(TIMEOUT_ENV)
    try:
        return float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        raise UserError(f"${TIMEOUT_ENV}={raw!r}: not a number of seconds") from None


def mentions_helion(target: str, is_file: bool) -> bool:
    """Whether the code at ``target`` (a file path or a module name) mentions Helion; read, never imported."""
    try:
        if is_file:
            path: Path | None = Path(target)
        else:
            spec = importlib.util.find_spec(target)
            path = Path(spec.origin) if spec is not None and spec.origin else None
        return path is not None and "helion" in path.read_text(errors="replace")
    except (ImportError, OSError, ValueError):
        return False


def kernel_mentions_helion(campaign: Any) -> bool:
    """Whether a campaign's kernel comes from code that mentions Helion (read, never imported): such a
    campaign's processes import Helion (trusted, seconds) while its kernel is checked."""
    kernel = campaign.spec.kernel
    if kernel.inputs is not None:  # a bare Helion kernel with an input factory
        return True
    where = kernel.source.rpartition(":")[0]
    if where.endswith(".py"):
        return mentions_helion(str((campaign.path.parent / where).resolve()), True)
    return mentions_helion(where, False)  # False where unreadable: the checks that follow say what is wrong


def _preload(names: tuple[str, ...] = ("torch", "triton")) -> None:
    """Import ``names`` here (absent or broken ones are the trial import's to report). Before the fork: torch
    and Triton, so the child need not. Helion only after it, while the child imports: Helion's import
    initializes CUDA (2026-11-30, benchmarks/results/h200_fork_cuda.json), and a child forked after that
    fails on any CUDA call at import time; imported in the child and then here, one after the other, it cost a
    Helion campaign about 20 s before its first record on the H200 host (2026-12-01)."""
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S110 - absent or broken: the trial import reports it for the kernel
            pass


def _import_in_child(target: str, is_file: bool, module: str | None) -> str:
    """Runs in the forked child: import, and return '' or why it failed (one line)."""
    try:
        if is_file:
            load_file(Path(target), module, private="paretotune_trial")
        else:
            importlib.import_module(target)
        return ""
    except SystemExit as exc:
        return f"it called sys.exit({exc.code!r}) while being imported"
    except BaseException as exc:  # noqa: BLE001 - anything user code raises
        return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def trial_import(target: str, is_file: bool, where: str, *, module: str | None = None) -> None:
    """Import ``target`` (a file path or a module name; ``module``: a file's dotted name, see
    :func:`~paretotune.campaign.kernel_file.load_file`) in a forked child within :func:`timeout_s`; raise a
    one-line UserError naming it if the import fails, exits or does not finish.

    The child leads its own process group, and the group (the child and whatever the import started) is
    killed when the trial ends, however it ends; the child kills it too if this process dies. Its output
    goes nowhere: the caller's own import of the file shows it once. The answer is the child's one-line
    message, read as soon as it is whole: a process the import forked may hold the pipe open long after
    (the 2026-12-01 audit: "did not finish within 5 s" for a file that had finished and forked)."""
    limit = timeout_s()
    _preload()
    what = f"{target}" if is_file else f"module '{target}'"
    read_fd, write_fd = os.pipe()
    watch_r, watch_w = os.pipe()  # end of file in the child when this process is gone
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child: never return into the caller's code
        code = 0
        try:
            lead_own_group()
            faulthandler.disable()  # a crash at import is reported by the parent, in one line
            os.close(read_fd)
            os.close(watch_w)
            kill_own_group_when_closed(watch_r)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)  # user code's output must not reach the CLI's (nor be shown twice)
            os.dup2(devnull, 2)
            message = _import_in_child(target, is_file, module)
            os.write(write_fd, ("E" + message if message else "K").encode("utf-8", "replace")[:4000] + b"\n")
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    with contextlib.suppress(OSError):  # set on both sides: no window where the child is still in ours
        os.setpgid(pid, pid)
    os.close(write_fd)
    os.close(watch_r)
    deadline = time.monotonic() + limit
    try:
        if mentions_helion(target, is_file):
            _preload(("helion",))  # in this process, at the same time as the child's import
        data, status = _wait_for_child(pid, read_fd, deadline)
    finally:
        os.close(read_fd)
        kill_group(pid)  # the child and everything its import started; the child is not reaped yet
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        os.close(watch_w)
    if data.startswith(b"K"):
        return
    if data.startswith(b"E"):
        raise UserError(f"{where}: cannot import {what} ({data[1:].decode('utf-8', 'replace').strip()})")
    if status is None:
        raise UserError(f"{where}: importing {what} did not finish within {limit:g} s "
                        f"(an endless loop at import time? ${TIMEOUT_ENV} sets the limit)")
    how = (f"killed by signal {-os.waitstatus_to_exitcode(status)}" if os.WIFSIGNALED(status)
           else f"exit code {os.waitstatus_to_exitcode(status)}")
    raise UserError(f"{where}: importing {what} ended the process ({how}; os._exit or a crash at import time)")


def _wait_for_child(pid: int, fd: int, deadline: float) -> tuple[bytes, int | None]:
    """The child's message (one line, b'' if none) and its wait status if it ended by itself (None: it was
    still running at the deadline, or it wrote its message and may still be ending)."""
    data = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], min(0.05, max(0.0, deadline - time.monotonic())))
        if ready:
            chunk = os.read(fd, 4096)
            data += chunk
            if b"\n" in data:
                return data, None
            if chunk:
                continue
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            with contextlib.suppress(OSError):  # what it wrote just before it ended
                while select.select([fd], [], [], 0)[0] and (chunk := os.read(fd, 4096)):
                    data += chunk
            return data, status
        if ready:  # end of file without a message, the child still there (it closed the pipe): wait for it
            time.sleep(0.05)
    return data, None
