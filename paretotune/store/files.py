"""Checked readers for the files of a run directory: damage is a one-line UserError naming the file.

A run directory is user-visible and may be edited, truncated or replaced by anything; every reader goes
through these two so that a FIFO, a huge file, bad UTF-8 or bad JSON never becomes a traceback or a hang.
"""
from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from paretotune.errors import UserError


def text_file(path: Path, missing: str, limit: int = 1 << 30) -> str:
    """A run file's text; not a regular file, unreadable or not UTF-8 is a one-line UserError."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise UserError(f"{path}: {missing}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{path}: not a regular file")
    if st.st_size > limit:
        raise UserError(f"{path}: too large ({st.st_size} bytes)")
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def json_file(path: Path, missing: str) -> Any:
    """A run file's JSON; damage is a one-line UserError."""
    try:
        return json.loads(text_file(path, missing, limit=64 << 20))
    except (json.JSONDecodeError, RecursionError) as exc:
        line = f" (line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise UserError(f"{path}: not valid JSON{line}") from None
