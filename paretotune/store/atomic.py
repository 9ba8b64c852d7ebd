"""Replace a file whole: a reader (or a crash at any moment) sees the old content or the new, never a torn one.

Every file paretotune rewrites in place (run.json, checkpoint.json, engine checkpoints, progress.csv, ACF
files, service state, helper scripts) goes through :func:`atomic_write`. The fsync policy, stated once:

1. the new content goes to a temporary file in the target's own folder (``rename`` is atomic only within one
   file system), named ``<name>.<pid>.<random>.tmp`` so concurrent writers never share one and left-overs of a
   crash keep the target's prefix (``engine-*`` clean-up finds them) and never match an extension glob;
2. that file is flushed and fsynced, so the rename cannot publish a name whose data is still in flight;
3. ``os.replace`` swaps it in;
4. the folder is fsynced, so the rename itself survives a power cut (file systems that cannot fsync a folder
   refuse with EINVAL; the rename is still atomic there, only its durability is the file system's).

Appends (results.jsonl) are not rewrites and keep their own per-line fsync in :mod:`paretotune.store.run_dir`.
"""
from __future__ import annotations

import errno
import json
import os
import secrets
from pathlib import Path
from typing import Any


def atomic_write(path: str | os.PathLike[str], data: str | bytes, *, mode: int | None = None) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` by temp file, fsync, rename, fsync of the folder.

    ``mode`` sets the permission bits before the rename (an executable script is never seen unexecutable);
    without it the file gets the usual ``0o666 & ~umask``.
    """
    target = Path(path)
    blob = data.encode("utf-8") if isinstance(data, str) else data
    tmp = target.with_name(f"{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def atomic_write_json(path: str | os.PathLike[str], obj: Any, **dumps: Any) -> None:
    """:func:`atomic_write` of ``json.dumps(obj, **dumps)``."""
    atomic_write(path, json.dumps(obj, **dumps))


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Make a rename or a new name in ``folder`` durable (a no-op where the file system refuses, see above)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)
