"""The few lines a shipped file runs at import to decide whether its ACFs can be applied in this process.

An ACF is a ptxas input: a build with ``--apply-controls`` fails under any ptxas but the release it was made for
(ptxas 13.4 rejects 13.3's), and Triton's bundled ptxas predates ACFs. A shipped heuristic or launch table that
applied its ACFs anyway would break the kernel it was meant to speed up, so it checks first (the folder has no
space, every ACF is there, ``TRITON_PTXAS_PATH`` is that release) and otherwise warns once and answers as the
previous heuristic did. This module only holds that source text; the shipped file has no paretotune import.
"""
from __future__ import annotations

from collections.abc import Sequence

ACF_DIR = "acf"  # the shipped ACFs lie in this folder beside the module, named <sha256>.acf

_SOURCE = '''import os as _paretotune_os
import subprocess as _paretotune_subprocess
import warnings as _paretotune_warnings

_PARETOTUNE_DIR = _paretotune_os.path.dirname(_paretotune_os.path.abspath(__file__))
_PARETOTUNE_ACFS = @ACFS@  # beside this module, in @DIR@/
_PARETOTUNE_PTXAS_RELEASE = @RELEASE@  # the ACFs are for this ptxas release (and sm_90) only


def _paretotune_acf(name):
    return _paretotune_os.path.join(_PARETOTUNE_DIR, "@DIR@", name)


def _paretotune_not_ready():
    """Why the ACFs cannot be applied in this process (None: they can)."""
    if " " in _PARETOTUNE_DIR:
        return f"the folder {_PARETOTUNE_DIR!r} has a space (Triton splits ptx_options on spaces)"
    missing = [n for n in _PARETOTUNE_ACFS if not _paretotune_os.path.isfile(_paretotune_acf(n))]
    if missing:
        return f"@DIR@/{missing[0]} is missing beside {__file__}"
    ptxas = _paretotune_os.environ.get("TRITON_PTXAS_PATH", "")
    if not ptxas:
        return "TRITON_PTXAS_PATH is not set (Triton's bundled ptxas rejects ACFs)"
    try:
        version = _paretotune_subprocess.run([ptxas, "--version"], capture_output=True, text=True,
                                             timeout=60).stdout
    except Exception as exc:  # noqa: BLE001 - any failure means: do not apply the ACFs
        return f"TRITON_PTXAS_PATH={ptxas!r} does not run ({type(exc).__name__})"
    if f"release {_PARETOTUNE_PTXAS_RELEASE}," not in version:
        return f"TRITON_PTXAS_PATH={ptxas!r} is not ptxas {_PARETOTUNE_PTXAS_RELEASE}"
    return None


_PARETOTUNE_NOT_READY = _paretotune_not_ready() if _PARETOTUNE_ACFS else None
if _PARETOTUNE_NOT_READY:
    _paretotune_warnings.warn(f"{__file__}: the shipped ACFs are not applied, every call gets the previous "
                              f"answer: {_PARETOTUNE_NOT_READY}", stacklevel=2)
'''


def readiness(acfs: Sequence[str], release: str) -> str:
    """The import-time check for a file shipping ``acfs`` (names under ``acf/``) made for ptxas ``release``."""
    return (_SOURCE.replace("@ACFS@", repr(tuple(sorted(acfs)))).replace("@RELEASE@", repr(release))
            .replace("@DIR@", ACF_DIR))
