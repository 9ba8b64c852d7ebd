"""Import a campaign's kernel code once in a forked child first, so that what user code does at import time
cannot end or hang the campaign process: ``sys.exit(3)``, ``os._exit(0)``, an endless loop or an exception
become one-line errors naming the file. Only then does the caller import it for real (workers import it
normally, as before).

A fork, not a spawn: the child starts with the parent's modules (torch and Triton are imported first), so the
trial costs about what the user's own module costs to import, not another interpreter start-up.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import select
import signal
import sys
import time
from pathlib import Path

from paretotune.errors import UserError

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


def _import_in_child(target: str, is_file: bool) -> str:
    """Runs in the forked child: import, and return '' or why it failed (one line)."""
    try:
        if is_file:
            path = Path(target)
            spec = importlib.util.spec_from_file_location(f"paretotune_trial_{path.stem}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            importlib.import_module(target)
        return ""
    except SystemExit as exc:
        return f"it called sys.exit({exc.code!r}) while being imported"
    except BaseException as exc:  # noqa: BLE001 - anything user code raises
        return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def trial_import(target: str, is_file: bool, where: str) -> None:
    """Import ``target`` (a file path or a module name) in a forked child within :func:`timeout_s`; raise a
    one-line UserError naming it if the import fails, exits or does not finish."""
    limit = timeout_s()
    _preload()
    what = f"{target}" if is_file else f"module '{target}'"
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child: never return into the caller's code
        os.close(read_fd)
        code = 0
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)  # user code's prints must not reach the CLI's output
            message = _import_in_child(target, is_file)
            os.write(write_fd, ("E" + message if message else "K").encode("utf-8", "replace")[:4000])
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    deadline = time.monotonic() + limit
    if mentions_helion(target, is_file):
        _preload(("helion",))  # in this process, at the same time as the child's import
    try:
        data = _read_until(read_fd, deadline)
    finally:
        os.close(read_fd)
    if data is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise UserError(f"{where}: importing {what} did not finish within {limit:g} s "
                        f"(an endless loop at import time? ${TIMEOUT_ENV} sets the limit)")
    _, status = os.waitpid(pid, 0)
    if data.startswith(b"K"):
        return
    if data.startswith(b"E"):
        raise UserError(f"{where}: cannot import {what} ({data[1:].decode('utf-8', 'replace')})")
    how = (f"killed by signal {-os.waitstatus_to_exitcode(status)}" if os.WIFSIGNALED(status)
           else f"exit code {os.waitstatus_to_exitcode(status)}")
    raise UserError(f"{where}: importing {what} ended the process ({how}; os._exit or a crash at import time)")


def _read_until(fd: int, deadline: float) -> bytes | None:
    """Everything the child writes before it closes the pipe, or None at the deadline."""
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
