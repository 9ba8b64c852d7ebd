"""``paretotune --help``, each subcommand's ``--help`` and the refusal of a bad campaign file answer at once: they
load none of the heavy libraries a command needs only when it runs (torch, Triton, Helion, CompileIQ, pandas,
SciPy, Ray, pymoo; together about 1.5 s of start-up on an idle CPU). Checked by what the process imported
(``python -X importtime``), not by a wall time; the times are recorded in benchmarks/results/cli_startup_devbox.json."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from paretotune.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "triton", "helion", "compileiq", "pandas", "scipy", "ray", "pymoo", "numpy")


def _imported(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -X importtime -m paretotune.cli ARGS`` (the ``paretotune`` script's entry point): (the
    process, the top-level packages it imported)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "paretotune.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    names = {m.group(1).split(".")[0] for m in re.finditer(r"^import time:.*\|\s*(\S+)\s*$", done.stderr, re.M)}
    return done, names


@pytest.mark.parametrize("args", [["--help"], *[[name, "--help"] for name in COMMANDS]],
                         ids=lambda a: " ".join(a))
def test_help_loads_no_heavy_library(args: list[str], tmp_path: Path) -> None:
    done, names = _imported(args, tmp_path)
    assert done.returncode == 0 and "usage: paretotune" in done.stdout, done.stderr[-2000:]
    assert "paretotune" in names and not names & set(HEAVY), sorted(names & set(HEAVY))


@pytest.mark.parametrize(("text", "message"), [
    ("name: x\nkernel: {source: 'k.py:k'}\nbogus: 1\n", "bogus: unknown field"),
    ("name: x\nkernel: {source: 'no_such_kernel_module.ops:k'}\nshapes: [{n: 1}]\nobjectives: [registers]\n"
     "acf: {search_space: ptxas-13.3}\n", "kernel.source: cannot import module 'no_such_kernel_module.ops'"),
    ("name: x\nkernel: {source: 'missing.py:k'}\nshapes: [{n: 1}]\nobjectives: [registers]\n"
     "acf: {search_space: ptxas-13.3}\n", "kernel.source: kernel file not found"),
], ids=["schema", "module", "file"])
def test_a_bad_campaign_file_is_refused_before_any_heavy_library_loads(tmp_path: Path, text: str,
                                                                        message: str) -> None:
    campaign = tmp_path / "bad.yaml"
    campaign.write_text(text)
    done, names = _imported(["run", str(campaign), "--out", str(tmp_path / "run")], tmp_path)
    errors = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 2 and len(errors) == 1 and message in errors[0], errors
    assert not names & set(HEAVY), sorted(names & set(HEAVY))
    assert not (tmp_path / "run").exists()


def test_python_dash_m_paretotune_is_the_command_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "paretotune", "capture", "--help"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.startswith("usage: paretotune capture"), done.stderr


def test_exec_refuses_a_missing_shipped_folder_before_any_heavy_library_loads(tmp_path: Path) -> None:
    done, names = _imported(["exec", "--acfs", str(tmp_path / "absent"), "--", sys.executable, "-c", "pass"], tmp_path)
    errors = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 2 and len(errors) == 1 and "no such folder" in errors[0], errors
    assert not names & set(HEAVY), sorted(names & set(HEAVY))
