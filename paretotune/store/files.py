"""Checked readers for the files of a run directory: damage is a one-line UserError naming the file.

A run directory is user-visible and may be edited, truncated or replaced by anything; every reader goes
through these two so that a FIFO, a huge file, bad UTF-8 or bad JSON never becomes a traceback or a hang.
``text_file`` is the project's one checked reader (:mod:`paretotune.text_file`), which campaign files use too.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from paretotune.errors import UserError
from paretotune.text_file import read_text as text_file

__all__ = ["json_file", "text_file"]


def json_file(path: Path, missing: str) -> Any:
    """A run file's JSON; damage is a one-line UserError."""
    try:
        return json.loads(text_file(path, missing, limit=64 << 20))
    except (json.JSONDecodeError, RecursionError) as exc:
        line = f" (line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise UserError(f"{path}: not valid JSON{line}") from None
