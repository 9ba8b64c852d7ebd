"""The trial import (a forked child imports the kernel's code before the campaign process does) imports what the
code needs in the parent first, so the child does not pay for it and the parent once more: Helion only where the
code mentions it. Each case in a fresh interpreter, so nothing a test imported before can stand in."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# what the kernel file sees at its import in the child: whether Helion was imported before it
KERNEL = """import sys
open({mark!r}, "w").write("preloaded" if ("hel" + "ion") in sys.modules else "not preloaded")
{comment}
"""


@pytest.mark.parametrize(("comment", "expect"), [("# a Helion kernel: import helion", "preloaded"),
                                                 ("# a Triton kernel", "not preloaded")], ids=["h", "t"])
def test_the_parent_imports_first_what_the_code_names(tmp_path: Path, comment: str, expect: str) -> None:
    """(The kernel file's path must not contain the word itself: pytest names tmp_path after the test.)"""
    mark = tmp_path / "mark.txt"
    kernel = tmp_path / "kernel.py"
    kernel.write_text(KERNEL.format(mark=str(mark), comment=comment))
    code = f"from paretotune.campaign.trial_import import trial_import; trial_import({str(kernel)!r}, True, 'x')"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
    assert mark.read_text() == expect
