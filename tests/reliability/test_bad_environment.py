"""Bad input beyond the campaign file: ptxas missing, too old or not ptxas at all, an unwritable run directory,
an unknown ncu metric. (Resume's refusals are in tests/campaign/test_resume_errors.py.)
Each is one line on stderr with exit code 2 and no traceback (``--debug`` shows it)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from paretotune.cli import main
from reliability.conftest import ROOT, cli_env, refused
from reliability.standins import version_only

BAD = ROOT / "tests" / "fixtures" / "bad_campaigns"
QUICKSTART = ROOT / "configs" / "quickstart.yaml"



@pytest.mark.parametrize(("ptxas", "message"), [
    ("missing", r"\$PARETOTUNE_PTXAS=.*/no/such/ptxas: no such file"),
    ("12.4", r"ptxas 12\.4\.131 is too old; --apply-controls needs >= 13\.3"),
    ("garbage", r"not a ptxas binary \(unexpected --version output\)"),
])
def test_unusable_ptxas(ptxas: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    if ptxas == "missing":
        path = tmp_path / "no" / "such" / "ptxas"
    elif ptxas == "12.4":
        path = version_only(tmp_path, "Cuda compilation tools, release 12.4, V12.4.131")
    else:
        path = version_only(tmp_path, "hello from not-ptxas 1.0")
    monkeypatch.setenv("PARETOTUNE_PTXAS", str(path))
    line = refused(["run", str(QUICKSTART), "--out", str(tmp_path / "run"), "--quiet"], capsys)
    assert re.search(message, line), line
    assert not (tmp_path / "run").exists()


def test_unwritable_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    line = refused(["run", str(QUICKSTART), "--out", str(blocker / "run"), "--quiet"], capsys)
    assert f"{blocker / 'run'}: run directory is not writable (Not a directory)" in line


def test_campaign_file_missing_or_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert f"{tmp_path / 'nope.yaml'}: no such campaign file" in refused(["run", str(tmp_path / "nope.yaml")], capsys)
    assert f"{tmp_path}: is a directory" in refused(["run", str(tmp_path)], capsys)


def test_unknown_ncu_metric(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    from paretotune.objectives.ncu_objectives import NcuMetric
    from paretotune.objectives.registry import OBJECTIVES

    monkeypatch.setitem(OBJECTIVES, "ncu_metric", NcuMetric)
    path = tmp_path / "c.yaml"
    path.write_text(QUICKSTART.read_text().replace(
        "  - theoretical_occupancy  # max", "  - {name: ncu_metric, metric: sm__foo_bar.avg}"))
    line = refused(["run", str(path), "--out", str(tmp_path / "run")], capsys)
    assert f"{path.resolve()}: objectives[2].metric: objective 'ncu_metric': metric 'sm__foo_bar.avg' is not " \
           "in the catalog" in line, line


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--debug", "run", str(BAD / "objective_unknown.yaml")]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.strip().splitlines()[-1].startswith("paretotune: error: ")


def test_one_line_in_a_real_process(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "paretotune.cli", "run", str(BAD / "search_engine_unknown.yaml"),
                           "--out", str(tmp_path / "run")], env=cli_env(), cwd=ROOT, capture_output=True, text=True, check=False,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "search.engine: unknown engine 'compileqi'" in proc.stderr
