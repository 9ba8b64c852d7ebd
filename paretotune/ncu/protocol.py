"""Marker lines a child measurement program prints on stderr so the runner can tell what happened.

Optional for a child: the runner works without them (it then bisects a crashed batch blindly). With them it
can record a candidate whose build or warm-up raised as failed without re-running anything, isolate the
candidate a crash happened in first, and stop at once on a setup error instead of bisecting a batch that can
never work. Format, one per line::

    ==PARETOTUNE== start <range>            about to build / warm up this item (outside any range)
    ==PARETOTUNE== measure <range>          about to launch it inside its range
    ==PARETOTUNE== failed <range> <reason>  this item failed; the child goes on with the others
    ==PARETOTUNE== fatal - <reason>         nothing can be measured (bad spec, no NVTX); do not retry
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Literal, TextIO

MarkerEvent = Literal["start", "measure", "failed", "fatal"]
TAG = "==PARETOTUNE=="
_MARKER = re.compile(rf"^{re.escape(TAG)} (start|measure|failed|fatal) (\S+)(?: (.*))?$")


@dataclass(frozen=True)
class Marker:
    event: MarkerEvent
    range_name: str  # "-" for fatal
    message: str = ""


def format_marker(event: MarkerEvent, range_name: str, message: str = "") -> str:
    one_line = " ".join(message.split())
    return f"{TAG} {event} {range_name}" + (f" {one_line}" if one_line else "")


def emit(event: MarkerEvent, range_name: str, message: str = "", stream: TextIO | None = None) -> None:
    out = stream if stream is not None else sys.stderr
    print(format_marker(event, range_name, message), file=out, flush=True)


def parse_markers(text: str) -> list[Marker]:
    markers: list[Marker] = []
    for line in text.splitlines():
        match = _MARKER.match(line.strip())
        if match:
            event, name, message = match.groups()
            markers.append(Marker(event, name, message or ""))  # type: ignore[arg-type]
    return markers
