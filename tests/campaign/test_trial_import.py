"""The trial import (a forked child imports the kernel's code before the campaign process does) imports Helion in
the parent too, where the code mentions it: before the fork where that is fork-safe (a CPU build of torch, or
torch's NVML check on: the child then finds it imported), else beside the child's import, not one after the other
(Helion's import asks the CUDA driver, and a child forked after that fails on any CUDA call). Each case in a fresh
interpreter, so nothing a test imported before can stand in."""
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
# a CUDA build of torch whose availability check asks the driver (no NVML check): as on a GPU host by default
AS_IF_CUDA = "import os, torch; os.environ.pop('PYTORCH_NVML_BASED_CUDA_CHECK', None); torch.version.cuda = '13.0'; "


@pytest.mark.parametrize(("comment", "setup", "in_child", "parent_has_it"), [
    ("# a Helion kernel: import helion", "", "preloaded", True),
    ("# a Helion kernel: import helion", AS_IF_CUDA, "not preloaded", True),
    ("# a Triton kernel", "", "not preloaded", False)], ids=["h-cpu-torch", "h-cuda-torch", "t"])
def test_the_parent_imports_it_before_the_fork_only_where_that_is_fork_safe(
        tmp_path: Path, comment: str, setup: str, in_child: str, parent_has_it: bool) -> None:
    """(The kernel file's path must not contain the word itself: pytest names tmp_path after the test.)"""
    mark = tmp_path / "mark.txt"
    kernel = tmp_path / "kernel.py"
    kernel.write_text(KERNEL.format(mark=str(mark), comment=comment))
    code = (f"import sys; {setup}from paretotune.campaign.trial_import import trial_import; "
            f"trial_import({str(kernel)!r}, True, 'x'); print('hel' + 'ion' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, timeout=300, capture_output=True, text=True)
    assert mark.read_text() == in_child
    assert out.stdout.strip() == str(parent_has_it)


# a Triton kernel file that notes each import of it (by which process)
LOGGED_KERNEL = '''import os
open({log!r}, "a").write(str(os.getpid()) + "\\n")
{comment}
import torch, triton, triton.language as tl
from paretotune import TritonKernel

@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)

vector_add = TritonKernel(add_kernel, inputs=lambda s: dict(x=torch.randn(s["n"]), y=torch.randn(s["n"]),
                          out=torch.empty(s["n"])), grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),),
                          space={{"BLOCK": [256, 1024], "num_warps": [2, 4]}})
'''


@pytest.mark.parametrize(("comment", "early"), [("# a Triton kernel", True),
                                                ("# import helion (a heuristic file may be found)", False)],
                         ids=["triton", "mentions-h"])
def test_workers_may_import_the_kernel_once_its_trial_passed_unless_a_heuristic_may_follow(
        tmp_path: Path, comment: str, early: bool) -> None:
    """``after_trial`` (the early workers' go-ahead) comes right after the child's trial for a kernel that cannot
    have a heuristic file beside it, before this process's own import: the workers' import and this one's overlap.
    A kernel file that mentions Helion may find one after its import, whose trial comes first."""
    import os

    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter

    log = tmp_path / "imports.log"
    (tmp_path / "kern.py").write_text(LOGGED_KERNEL.format(log=str(log), comment=comment))
    campaign = campaign_from_text("name: order\nkernel: {source: kern.py:vector_add}\nshapes: [{name: s, n: 4096}]\n"
                                  "objectives: [registers]\n", tmp_path / "campaign.yaml")
    at_signal: list[list[str]] = []
    make_adapter(campaign, trial_import=True, after_trial=lambda: at_signal.append(log.read_text().split()))
    child, parent = log.read_text().split()  # the trial child's import, then this process's
    assert parent == str(os.getpid()) != child
    assert at_signal == ([[child]] if early else [[child, parent]])


def test_the_import_says_which_of_its_steps_took_the_time(tmp_path: Path) -> None:
    """run.json's ``kernel_import_s``: a kernel file whose import sleeps shows it twice, in the trial child's import
    and in this process's own, and nowhere else; a slow start on a GPU host can then be read off its runs."""
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter

    (tmp_path / "kern.py").write_text(LOGGED_KERNEL.format(log=str(tmp_path / "imports.log"),
                                                           comment="import time; time.sleep(0.8)"))
    campaign = campaign_from_text("name: steps\nkernel: {source: kern.py:vector_add}\nshapes: [{name: s, n: 4096}]\n"
                                  "objectives: [registers]\n", tmp_path / "campaign.yaml")
    steps: dict[str, float] = {}
    make_adapter(campaign, trial_import=True, steps=steps)
    assert set(steps) == {"trial_import", "import", "adapter", "heuristic", "space_and_checks",
                          "trial_before_fork", "trial_helion_here", "trial_child_answer", "trial_child_end"}
    assert steps["trial_import"] >= 0.8 and steps["import"] >= 0.8
    assert steps["adapter"] + steps["heuristic"] + steps["space_and_checks"] < 0.8
    # the trial's time went to the child's import (no Helion here: the file does not mention it), not its end
    assert steps["trial_child_answer"] >= 0.8 > steps["trial_helion_here"] + steps["trial_child_end"]
