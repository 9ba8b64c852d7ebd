"""``with paretotune.capture(DIR):`` records only the calls inside the block, writes the same folder as the
command, and keeps what the block recorded when the block raises (the exception still reaches the caller)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = Path(__file__).resolve().parent / "programs" / "lib"

SCRIPT = textwrap.dedent('''
    import json, sys
    import torch, triton, triton.language as tl
    import paretotune
    import capkernels.ops as ops

    @triton.jit
    def triple(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)

    if __name__ == "__main__":
        x, y = torch.randn(512), torch.randn(512)
        ops.scale_add_op(x, y, 1.5)  # before the block: not recorded
        with paretotune.capture(sys.argv[1], generations=1) as cap:
            ops.scale_add_op(x, y, 1.5)
            ops.scale_add_op(x, y, 1.5)
            triple[(4,)](x, 512, BLOCK=128)
        ops.scale_add_op(x, y, 1.5)  # after it: not recorded either
        print(json.dumps({"campaigns": [p.name for p in cap.campaigns],
                          "calls": {r.kernel: r.calls for r in cap.kernels}, "summary": cap.summary}))
        try:
            with paretotune.capture(sys.argv[2], check=False):
                ops.relu_op_(torch.randn(64))
                raise RuntimeError("boom")
        except RuntimeError as exc:
            print("raised", exc)
''')


def test_the_context_manager_records_the_block(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(LIB), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "a"), str(tmp_path / "b")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    report = json.loads(lines[0])
    assert report["calls"] == {"scale_add": 2, "triple": 1}
    assert sorted(report["campaigns"]) == ["scale_add.yaml", "triple.yaml"]
    assert (tmp_path / "a" / "summary.txt").read_text() == report["summary"]
    assert lines[1] == "raised boom"
    raised = json.loads((tmp_path / "b" / "capture.json").read_text())
    assert raised["program"]["exit_code"] == 1 and [k["name"] for k in raised["kernels"]] == ["relu_"]
    assert (tmp_path / "b" / "relu_.yaml").is_file()


def test_an_unknown_timing_is_one_line_and_makes_no_folder(tmp_path: Path) -> None:
    import pytest

    import paretotune
    from paretotune.errors import UserError

    with pytest.raises(UserError, match=r"^capture: timing: 'every' is not one of sampled, all$"):
        with paretotune.capture(tmp_path / "cap", timing="every"):
            pass
    assert not (tmp_path / "cap").exists()
