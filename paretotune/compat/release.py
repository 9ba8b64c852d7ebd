"""Which release of a library is installed, and a one-line refusal of one outside the tested range."""
from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version

from paretotune.errors import UserError

Release = tuple[int, ...]


def installed(*distributions: str) -> str | None:
    """The installed version of the first of ``distributions`` that is installed (read from its metadata: the
    library is not imported), else None."""
    for name in distributions:
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    return None


def parse(text: str) -> Release:
    """``"3.6.0+git1234"`` -> ``(3, 6, 0)``: the leading numeric release, local and pre-release tags ignored."""
    match = re.match(r"\d+(\.\d+)*", text.strip())
    if match is None:
        raise ValueError(f"not a release number: {text!r}")
    return tuple(int(p) for p in match.group(0).split("."))


def _spelled(release: Release) -> str:
    return ".".join(str(p) for p in release)


def require(name: str, found: str | None, lowest: Release, below: Release) -> None:
    """Raise :class:`~paretotune.errors.UserError` (one line) unless ``lowest <= found < below``; a library
    that is not installed passes (its import fails where it is needed, with its own message)."""
    if found is None:
        return
    if lowest <= parse(found) < below:
        return
    wanted = f">={_spelled(lowest)},<{_spelled(below)}"
    raise UserError(f"{name} {found} is not a release paretotune was tested with (it needs {name}{wanted}, "
                    f"because it uses {name}'s internals: paretotune/compat/); pip install '{name}{wanted}'")
