"""On a GPU host, a Helion campaign's fork server imports Helion under torch's NVML check and its children can still
use CUDA (the GPU worker comes from it). In a fresh interpreter: the fork server is the process's first, and nothing
this test process imported stands in."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

PROBES = '''
import os, sys


def on_gpu(conn):
    """Run in a child of the fork server: was Helion there already, and does CUDA work?"""
    had_helion = "helion" in sys.modules
    import torch
    value = float(torch.ones(1024, device="cuda").sum().item())
    conn.send((had_helion, value, os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")))
'''

MAIN = '''
import sys
sys.path.insert(0, {folder!r})
from paretotune.build.fork_server import preload_modules, start_early, worker_context
import probes

if __name__ == "__main__":
    start_early(helion=True)  # as a campaign does, before this process imports torch
    ctx = worker_context(helion=True)
    print("preload:", preload_modules())
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=probes.on_gpu, args=(child,))
    proc.start()
    print("gpu child:", parent.recv())
    proc.join()
'''


def test_a_helion_campaigns_fork_server_imports_helion_and_gives_cuda_to_its_children(tmp_path: Path) -> None:
    (tmp_path / "probes.py").write_text(textwrap.dedent(PROBES))
    script = tmp_path / "main.py"
    script.write_text(MAIN.format(folder=str(tmp_path)))
    out = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "'paretotune.build.helion_preload'" in out.stdout.split("preload:")[1].splitlines()[0]
    assert "gpu child: (True, 1024.0, '1')" in out.stdout  # Helion preloaded, CUDA usable, the NVML check on
