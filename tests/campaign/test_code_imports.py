"""Every piece of user code a campaign names (kernel.source, kernel.inputs, kernel.heuristic) is imported first
in one forked child, within $PARETOTUNE_IMPORT_TIMEOUT_S, and as few times as it can be.

The 2026-12-04 audit (issue 45, defect 2): kernel.inputs was imported in the CLI process itself: a module that
slept ran 300 s despite PARETOTUNE_IMPORT_TIMEOUT_S=10, one that segfaulted killed the CLI (exit 139) with no
message; a kernel file with a wrong attribute name was imported 4 times (trial, CLI, 2 workers) before the
one-line refusal. Each CLI runs in a subprocess in its own session (a segfault there must not take pytest).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "configs" / "quickstart.yaml"
SOFTMAX = "paretotune.kernels.bundled.softmax:triton_softmax"
LOGGED = "import os\nwith open(os.environ['IMPORTS_LOG'], 'a') as fh:\n    fh.write(f'{os.getpid()}\\n')\n"


def campaign(folder: Path, **kernel: str) -> Path:
    """The CPU quickstart (one small generation, two workers) with ``kernel`` as its kernel section."""
    data = yaml.safe_load(QUICKSTART.read_text())
    data["kernel"] = kernel
    data["search"].update(generations=1, pool_size=9)
    path = folder / "campaign.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run_cli(folder: Path, path: Path, limit_s: float = 240, **env: str) -> tuple[int, str, str, float]:
    """``paretotune run`` in its own session; every process of it killed after ``limit_s``."""
    full = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **env)
    full.setdefault("CIQ_SEARCH_SPACES_DIR", str(ROOT.parent / "shared" / "compileiq"))
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "paretotune.cli", "run", str(path), "--out", str(folder / "out"),
                             "--quiet"], cwd=folder, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    return proc.returncode, out, err, time.monotonic() - start


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    return lines[0]


def refusal(folder: Path, path: Path, **env: str) -> str:
    """``paretotune run`` of ``path``, which must exit 2 with one line on stderr: that line."""
    code, _, err, _ = run_cli(folder, path, **env)
    assert code == 2, (code, err[-3000:])
    return one_line(err)


@pytest.mark.parametrize(("field", "value"), [("inputs", "slow.py:inputs"), ("heuristic", "slow.py")])
def test_code_that_sleeps_at_import_is_refused_at_the_deadline(tmp_path: Path, field: str, value: str) -> None:
    """A heuristic file is imported on trial too, before anything says whose kernel it is for."""
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(300)\n")
    path = campaign(tmp_path, source=SOFTMAX, **{field: value})
    code, out, err, took = run_cli(tmp_path, path, PARETOTUNE_IMPORT_TIMEOUT_S="5")
    assert code == 2, (code, err[-3000:])
    assert one_line(err) == (f"paretotune: error: {path}: kernel.{field}: importing {tmp_path / 'slow.py'} did not "
                             "finish within 5 s (an endless loop at import time? $PARETOTUNE_IMPORT_TIMEOUT_S sets "
                             "the limit)")
    assert took < 200  # the deadline (5 s) after the CLI's own start-up, never the module's 300 s
    assert not (tmp_path / "out").exists() and out == ""


def test_inputs_that_segfault_at_import_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text("import ctypes\nctypes.string_at(0)\n")
    path = campaign(tmp_path, source=SOFTMAX, inputs="crash.py:inputs")
    assert refusal(tmp_path, path) == (f"paretotune: error: {path}: kernel.inputs: importing "
                                       f"{tmp_path / 'crash.py'} ended the process (killed by signal 11; os._exit "
                                       "or a crash at import time)")
    assert not (tmp_path / "out").exists()


def test_a_wrong_attribute_is_refused_by_the_first_import(tmp_path: Path) -> None:
    """The trial child looks the attribute up: the CLI and the early workers never import the file."""
    log = tmp_path / "imports.log"
    (tmp_path / "kernel.py").write_text(LOGGED + f"from {SOFTMAX.replace(':', ' import ')} as spec\n")
    path = campaign(tmp_path, source="kernel.py:spek")
    assert refusal(tmp_path, path, IMPORTS_LOG=str(log)) == (f"paretotune: error: {path}: kernel.source: module "
                                                             "'kernel.py' has no attribute 'spek'")
    assert len(log.read_text().split()) == 1


def test_a_heuristic_for_a_triton_kernel_is_refused(tmp_path: Path) -> None:
    """The audit: ``kernel.heuristic: ../../../../etc/passwd`` was accepted and ignored for a Triton kernel."""
    path = campaign(tmp_path, source=SOFTMAX, heuristic="../../../../etc/passwd")
    assert refusal(tmp_path, path) == (f"paretotune: error: {path}: kernel.heuristic: '../../../../etc/passwd' is "
                                       "not a Python file: an AOT heuristic is a .py file (relative to the campaign)")
    (tmp_path / "heuristic.py").write_text("")
    path = campaign(tmp_path, source=SOFTMAX, heuristic="heuristic.py")
    assert refusal(tmp_path, path) == (f"paretotune: error: {path}: kernel.heuristic: only a Helion kernel has an "
                                       "AOT heuristic; kernel 'triton_softmax' is a Triton kernel")
    assert not (tmp_path / "out").exists()


def test_a_captured_device_is_not_a_regular_file(tmp_path: Path) -> None:
    """The audit: ``kernel.captured: /dev/zero`` was reported as "no such file"."""
    path = campaign(tmp_path, source=SOFTMAX, captured="/dev/zero")
    assert refusal(tmp_path, path) == (f"paretotune: error: {path}: kernel.captured: /dev/zero: not a regular "
                                       "file (a pipe or device)")
