"""Bad input beyond the campaign file: ptxas missing, too old or not ptxas at all, an unwritable run directory,
an unknown ncu metric, no internet and no offline CompileIQ space. (Resume's refusals are in
tests/campaign/test_resume_errors.py.)
Each is one line on stderr with exit code 2 and no traceback (``--debug`` shows it)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from paretotune.cli import main
from reliability.conftest import ROOT, cli, cli_env, refused
from reliability.standins import version_only

BAD = ROOT / "tests" / "fixtures" / "bad_campaigns"
QUICKSTART = ROOT / "configs" / "quickstart.yaml"
EXAMPLES = ROOT / "docs" / "examples"
NO_NETWORK = {"https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}  # refused at once


def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """This process as on a machine without internet access and without CIQ_SEARCH_SPACES_DIR: GitHub cannot be
    reached (a proxy that refuses), CompileIQ's download cache is empty; cwd is a copy of docs/examples."""
    import compileiq.config.const

    monkeypatch.delenv("CIQ_SEARCH_SPACES_DIR", raising=False)
    for name, value in NO_NETWORK.items():
        monkeypatch.setenv(name, value)
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(compileiq.config.const, "_CACHE_DIR", str(tmp_path / "ciq-cache"))
    here = tmp_path / "examples"
    here.mkdir()
    for name in ("vector_add.py", "vector_add.yaml"):
        (here / name).write_text((EXAMPLES / name).read_text())
    monkeypatch.chdir(here)
    return here


def test_offline_without_a_search_space_is_one_line_naming_the_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/kernels.md's first command where no offline copy is beside the checkout: one line before any work
    (was: "internal error: ConnectionError ... api.github.com" after the baseline, exit 1, an empty runs/)."""
    from paretotune.toolchain import ciq_space

    here = offline(monkeypatch, tmp_path)
    monkeypatch.setattr(ciq_space, "CHECKOUT_COPY", Path("no-offline-copy-here"))
    line = refused(["run", "vector_add.yaml"], capsys)
    assert "vector_add.yaml: acf.search_space: cannot load CompileIQ's PTXAS 13.3 search space (no network" in line
    assert "set CIQ_SEARCH_SPACES_DIR to a folder with CompileIQ's manifest.json" in line, line
    assert "no-offline-copy-here" in line  # where the offline copy was looked for
    assert sorted(p.name for p in here.iterdir()) == ["vector_add.py", "vector_add.yaml"]  # no runs/ left


def test_offline_the_checkout_copy_is_found_without_the_variable(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`cd docs/examples && paretotune run vector_add.yaml`, as docs/kernels.md writes it, offline and without
    the variable: the ptxas 13.3 space CI uses (../shared/compileiq beside the checkout) is read, and said so."""
    copy = (ROOT.parent / "shared" / "compileiq").resolve()
    if not (copy / "manifest.json").is_file():
        pytest.skip("no ../shared/compileiq beside this checkout")
    here = offline(monkeypatch, tmp_path)
    env = cli_env(HOME=str(tmp_path))  # the environment offline() left: no variable, no network; an empty cache
    proc = subprocess.run(cli("run", "vector_add.yaml", "--quiet"), env=env, cwd=here, capture_output=True,
                          text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (run,) = (here / "runs").iterdir()
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert len(rows) >= 1 + 8 and sum(r["acf"] != "" for r in rows) >= 4  # the baseline, then sampled ACFs
    space = json.loads((run / "run.json").read_text())["acf_space"]
    assert space["source"] == "checkout copy" and Path(space["path"]).parent == copy



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


@pytest.mark.parametrize("argv", [["--debug", "run", str(BAD / "objective_unknown.yaml")],
                                  ["run", str(BAD / "objective_unknown.yaml"), "--debug"]],  # where the hint leads
                         ids=["before", "after"])
def test_debug_shows_the_traceback(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.strip().splitlines()[-1].startswith("paretotune: error: ")


def test_one_line_in_a_real_process(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "paretotune.cli", "run", str(BAD / "search_engine_unknown.yaml"),
                           "--out", str(tmp_path / "run")], env=cli_env(), cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "search.engine: unknown engine 'compileqi'" in proc.stderr
