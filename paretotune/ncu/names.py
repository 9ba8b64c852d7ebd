"""NVTX range names: how one (candidate, shape) launch is found again in ncu's output.

All Triton specializations of a kernel share one kernel name, so ncu results are matched to candidates by the
name of the push/pop range each launch sits in, never by kernel name.

Convention: ``pt_<candidate>_<shape>``, each part escaped so that only ``[A-Za-z0-9_-]`` remain:

- ``[A-Za-z0-9]`` stay as they are; every other character becomes ``-xx`` per UTF-8 byte (``_`` → ``-5f``,
  ``=`` → ``-3d``), so the two ``_`` separators are unambiguous and the mapping is reversible and injective:
  two different (candidate, shape) pairs never get the same name.
- Why so strict: ncu's NVTX filter syntax gives meaning to ``@ / , [ ] * +`` and, with ``regex:``, to every
  regex metacharacter; the raw CSV prints each range as ``domain:name:PL_Type:…`` inside a quoted cell, so
  ``:`` and ``"`` would break parsing. Letters, digits, ``_`` and ``-`` are special in none of these.

Examples: ``range_name(12, "4096x4096")`` → ``pt_12_4096x4096``; ``range_name(3, "M=64,N=8")`` →
``pt_3_M-3d64-2cN-3d8``.
"""
from __future__ import annotations

import re

PREFIX = "pt"
DEFAULT_DOMAIN_LABEL = "<default domain>"  # how ncu prints the NULL/default NVTX domain
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPE = re.compile(r"(?:-[0-9a-f]{2})+")


def escape_part(text: str) -> str:
    """Escape one part of a range name (reversible, output in ``[A-Za-z0-9-]``)."""
    out: list[str] = []
    for ch in text:
        if ch.isascii() and ch.isalnum():
            out.append(ch)
        else:
            out.extend(f"-{b:02x}" for b in ch.encode("utf-8"))
    return "".join(out)


def unescape_part(text: str) -> str:
    """Inverse of :func:`escape_part`."""
    return _ESCAPE.sub(lambda m: bytes.fromhex(m.group(0).replace("-", "")).decode("utf-8"), text)


def range_name(candidate_id: int | str, shape: str) -> str:
    """The NVTX push/pop range name of one candidate on one shape."""
    return f"{PREFIX}_{escape_part(str(candidate_id))}_{escape_part(shape)}"


def parse_range_name(name: str) -> tuple[str, str] | None:
    """``(candidate_id, shape)`` as strings for a name made by :func:`range_name`, else ``None``."""
    parts = name.split("_")
    if len(parts) != 3 or parts[0] != PREFIX:
        return None
    return unescape_part(parts[1]), unescape_part(parts[2])


def check_safe(text: str, what: str) -> str:
    """Raise ValueError unless ``text`` is usable verbatim in an ncu NVTX filter and in the CSV cell."""
    if not _SAFE_NAME.match(text):
        raise ValueError(f"{what} {text!r} may only contain letters, digits, '_' and '-' (ncu NVTX filter syntax)")
    return text
