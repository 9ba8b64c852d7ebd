"""The capture folder around a recording: made (refusing one that holds a capture), then finished into the
ranked summary and one campaign per kernel. Shared by ``paretotune capture`` and ``paretotune.capture``.

Whether each campaign resolves as ``paretotune run`` will resolve it is the caller's check (a function of the
campaign files: :func:`paretotune.campaign.capture_check.check_in_child`), so this package needs nothing of the
campaign layer that reads what it writes.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from paretotune.errors import UserError

# campaign files -> file -> the one-line reason it does not resolve, or None
CampaignCheck = Callable[[list[Path]], dict[str, str | None]]


def campaign_options(shapes: int, generations: int, wall_clock_s: float | None) -> Any:
    from paretotune.capturing.writer import CampaignOptions

    if shapes < 1:
        raise UserError(f"--shapes: {shapes} is less than 1")
    if generations < 1:
        raise UserError(f"--generations: {generations} is less than 1")
    if wall_clock_s is not None and not wall_clock_s > 0:
        raise UserError(f"--wall-clock-s: {wall_clock_s} is not positive")
    return CampaignOptions(shapes=shapes, generations=generations, wall_clock_s=wall_clock_s)


def check_out(out: Path) -> None:
    """Refuse a capture folder that holds a capture or is a file."""
    from paretotune.capturing.recorder import RECORD

    if out.exists() and not out.is_dir():
        raise UserError(f"--out: {out} is a file, not a folder")
    if (out / RECORD).exists():
        raise UserError(f"--out: {out} already holds a capture ({RECORD}); remove it or choose another folder")


def prepare_out(out: Path) -> bool:
    """Make the capture folder; refuse one that holds a capture or is a file. Whether it was made here."""
    check_out(out)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    return created


def finish(out: Path, options: Any, *, check: CampaignCheck | None = None) -> tuple[list[Any], str]:
    """From ``out/capture.json``: the campaigns, their ``check`` (None: left unchecked), the summary.
    (rows, summary text)."""
    from paretotune.capturing.recorder import RECORD
    from paretotune.capturing.writer import drop_campaign, write_campaigns, write_summary

    doc = json.loads((out / RECORD).read_text(encoding="utf-8"))
    rows = write_campaigns(doc, out, options)
    if check is not None:
        files = {row.rank: (out / row.campaign).resolve() for row in rows if row.campaign}
        try:
            problems = check(list(files.values()))
        except KeyboardInterrupt:  # the summary is still written; the campaigns are left unchecked
            print("paretotune: capture: interrupted: the campaigns were not checked", file=sys.stderr)
            problems = {}
        for row in rows:
            problem = problems.get(str(files.get(row.rank)))
            if problem:
                drop_campaign(out, row, f"its campaign does not resolve: {problem}")
    return rows, write_summary(doc, rows, out)
