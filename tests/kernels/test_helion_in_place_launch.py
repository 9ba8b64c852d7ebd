"""An in-place Helion kernel (it returns None and writes an argument its input factory declares in ``outputs``,
as Helion's fp8 quant kernels and scaled_mm do): the timed launch is the kernel's call alone, and the correctness
check still compares the written argument. Until this was fixed the launch also gathered the written arguments
(``torch.cat`` of their float copies) for the check, and every clock timed that too: on an H100
dynamic_per_token_scaled_fp8_quant's call, 48 MiB of tensors, read 123 us by CUPTI beside about 200 MiB of
copies (by their bytes; not timed apart). Runs the kernel on CPU tensors through the Triton interpreter, in a
child (``TRITON_INTERPRET`` is read when Triton is imported)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from paretotune.measure.arms import written_by

ROOT = Path(__file__).resolve().parents[2]


def test_the_launch_of_an_in_place_kernel_is_its_call_alone_and_its_written_argument_is_still_checked() -> None:
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("interp_in_place_launch.py"))], env=env,
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["returned"] is None  # what the kernel returns, nothing gathered
    assert not {"cat", "_to_copy", "clone"} & set(out["launch_ops"]), out["launch_ops"]
    assert out["writes_are_args"] == [True]
    assert out["baseline_check"] is None and out["right_candidate_check"] is None
    assert out["wrong_candidate_check"].startswith("input tensor 0 (the kernel writes it): wrong answer")


def test_a_declared_write_counts_as_written_even_where_the_launch_left_its_bytes_as_they_were() -> None:
    """A reused allocation can already hold what the launch writes; the declared tensor is compared anyway."""
    out, read = torch.ones(4), torch.zeros(4)
    pristine = [out.clone(), read.clone()]
    assert written_by([out, read], pristine) == []
    assert written_by([out, read], pristine, (out,)) == [0]
    assert written_by([out, read], pristine, (out[:],)) == [0]  # a view over the same memory and shape
    read.add_(1.0)
    assert written_by([out, read], pristine, (out,)) == [0, 1]
