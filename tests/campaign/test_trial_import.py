"""The trial import (a forked child imports the kernel's code before the campaign process does) imports Helion in
the parent while the child imports, where the code mentions it: not one import after the other, and never before
the fork (Helion's import initializes CUDA, and a child forked after that fails on any CUDA call). Each case in a
fresh interpreter, so nothing a test imported before can stand in."""
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


@pytest.mark.parametrize(("comment", "parent_has_it"), [("# a Helion kernel: import helion", True),
                                                        ("# a Triton kernel", False)], ids=["h", "t"])
def test_the_parent_imports_it_beside_the_child_not_before(tmp_path: Path, comment: str,
                                                           parent_has_it: bool) -> None:
    """(The kernel file's path must not contain the word itself: pytest names tmp_path after the test.)"""
    mark = tmp_path / "mark.txt"
    kernel = tmp_path / "kernel.py"
    kernel.write_text(KERNEL.format(mark=str(mark), comment=comment))
    code = (f"import sys; from paretotune.campaign.trial_import import trial_import; "
            f"trial_import({str(kernel)!r}, True, 'x'); print('hel' + 'ion' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, timeout=300, capture_output=True, text=True)
    assert mark.read_text() == "not preloaded"  # the child was forked before the parent imported it
    assert out.stdout.strip() == str(parent_has_it)
