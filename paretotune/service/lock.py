"""One server per work directory: an exclusive ``flock`` on ``<workdir>/server.lock`` held for the server's life.

Two servers on one work directory would each think the other's running campaigns were left over from a crash,
kill them and start them again. The kernel drops the lock when the process ends, however it ends, so a
crashed server never leaves a stale lock behind.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from paretotune.errors import UserError


class WorkdirLock:
    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        self.path = self.workdir / "server.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> WorkdirLock:
        """Take the lock or raise a one-line UserError naming the server that holds it."""
        if self._fd is not None:
            return self
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise UserError(f"--workdir {self.workdir}: cannot create {self.path.name} ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            other = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise UserError(f"--workdir {self.workdir}: another paretotune server (pid {other}) is using it; "
                            "stop that one or choose another --workdir") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor drops the flock
            self._fd = None
