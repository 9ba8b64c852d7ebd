"""Read a file a user or a run names, refusing what could hang or exhaust memory: one reader for campaign files
(:mod:`paretotune.campaign.load`) and run files (:mod:`paretotune.store.run_dir`).

A FIFO, a device, a directory, an oversized or a non-UTF-8 file is refused before (or instead of) reading
it, so ``/dev/zero`` or a pipe cannot hang the process; at most ``limit + 1`` bytes are ever read, so a file
that grows while it is read cannot either. Every refusal is a one-line :class:`UserError` naming the path.
"""
from __future__ import annotations

import stat
from pathlib import Path

from paretotune.errors import UserError


def not_a_file(path: Path) -> str | None:
    """Why ``path`` is not a regular file to read: 'missing', 'a directory', 'a pipe or device', 'unreadable
    (<reason>)'; None if it is one. Looked at without opening it (a FIFO would block an open)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    if stat.S_ISDIR(st.st_mode):
        return "a directory"
    return None if stat.S_ISREG(st.st_mode) else "a pipe or device"


def read_text(path: Path, missing: str, limit: int = 1 << 30, *, what: str | None = None) -> str:
    """The UTF-8 text of ``path``. ``missing``: the message when it does not exist; ``what`` (e.g. ``"a campaign
    file"``): what the file should be, named in the messages for a directory, a pipe or an oversized file."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise UserError(f"{path}: {missing}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode) and what:
        raise UserError(f"{path}: is a directory, not {what}")
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{path}: not a regular file" + (f" (a pipe or device cannot be {what})" if what else ""))
    if st.st_size > limit:
        raise UserError(f"{path}: too large" + (f" for {what} ({st.st_size} bytes; the limit is {limit})" if what
                                               else f" ({st.st_size} bytes)"))
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    if len(data) > limit:
        raise UserError(f"{path}: too large{f' for {what}' if what else ''} (over {limit} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start})") from None
