"""The headless browser the page tests drive (Debian's chromium; .ci/install-chromium.sh installs it)."""
from __future__ import annotations

import shutil

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    """The first headless Chromium on PATH, or None."""
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def chromium() -> str:
    """The browser's path; the calling test is skipped where there is none."""
    path = find_browser()
    if path is None:
        pytest.skip("headless Chromium not installed (Debian: apt-get install chromium; .ci/install-chromium.sh)")
    return path
