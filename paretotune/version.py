"""The package's version and when this process first imported paretotune: base values any layer may read.

The package root re-exports both and imports this module first, so ``IMPORTED_AT`` is set when ``paretotune``
is first imported (a command's wall-clock budget counts from there: :func:`paretotune.runner.session.process_age_s`).
Modules inside paretotune read them here, never from the root (nothing imports the root but ``__main__``).
"""
from __future__ import annotations

import time

IMPORTED_AT = time.monotonic()
__version__ = "0.1.0"
