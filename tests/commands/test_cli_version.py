"""`paretotune --version` prints the installed distribution's version and exits 0."""
from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version


def test_version_flag_prints_installed_version() -> None:
    done = subprocess.run([sys.executable, "-m", "paretotune.cli", "--version"], capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"paretotune {version('paretotune')}"
