"""Each pip extra serves one area: with ray, fastapi, uvicorn, plotly, matplotlib and pyarrow unimportable
(a meta-path finder in a sitecustomize refuses them, in the CLI process and every worker it starts), the CLI
imports, the quickstart campaign runs, and each command that needs an extra fails with the one-line error
naming the ``pip install`` to run, exit code 2."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("ray", "fastapi", "uvicorn", "starlette", "plotly", "matplotlib", "pyarrow", "fastparquet")
SITECUSTOMIZE = '''
import os, sys
BLOCKED = set(filter(None, os.environ.get("PARETOTUNE_TEST_BLOCK", "").split(",")))


class Blocked:
    """Refuse the listed top-level packages as if they were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None


sys.meta_path.insert(0, Blocked())
'''


@pytest.fixture(scope="module")
def blocker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("block")
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return folder


def paretotune(blocker: Path, *args: str, block: tuple[str, ...] = EXTRAS,
               cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), str(ROOT)]),
           "PARETOTUNE_TEST_BLOCK": ",".join(block)}
    return subprocess.run([sys.executable, "-m", "paretotune.cli", *args], env=env, cwd=cwd, text=True,
                          capture_output=True, timeout=600)


@pytest.fixture(scope="module")
def run_dir(blocker: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """configs/quickstart.yaml with a smaller budget, run with every extra but ray blocked (CompileIQ, a core
    dependency and the quickstart's engine, requires ray and imports it for its workers)."""
    folder = tmp_path_factory.mktemp("quickstart")
    spec = yaml.safe_load((ROOT / "configs" / "quickstart.yaml").read_text())
    spec["search"].update(generations=1)  # the quickstart pool, one generation
    (folder / "quickstart.yaml").write_text(yaml.safe_dump(spec))
    done = paretotune(blocker, "run", "quickstart.yaml", "--out", "run", "--quiet", cwd=folder,
                      block=tuple(p for p in EXTRAS if p != "ray"))
    assert done.returncode == 0, done.stderr
    assert "on the Pareto front" in done.stdout
    return folder / "run"


def test_the_blocker_blocks(blocker: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(blocker), "PARETOTUNE_TEST_BLOCK": "plotly"}
    done = subprocess.run([sys.executable, "-c", "import plotly.io"], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "blocked by the test" in done.stderr


def test_the_cli_imports_no_extra(blocker: Path) -> None:
    code = ("import sys; import paretotune.cli as cli; cli.build_parser(); "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {EXTRAS!r}))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), str(ROOT)]),
           "PARETOTUNE_TEST_BLOCK": ",".join(EXTRAS)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_quickstart_needs_no_extra(run_dir: Path) -> None:
    assert (run_dir / "results.jsonl").read_text().count("\n") >= 11  # baseline + 10 candidates (+ twins)


def error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_report_needs_plotly(blocker: Path, run_dir: Path, tmp_path: Path) -> None:
    assert error(paretotune(blocker, "report", str(run_dir), "--out", str(tmp_path / "r"))) == (
        "paretotune: error: the HTML report needs plotly: pip install 'paretotune[report]'")
    assert not (tmp_path / "r").exists()  # no empty folder left behind
    assert error(paretotune(blocker, "report", str(run_dir))) == (
        "paretotune: error: the HTML report needs plotly: pip install 'paretotune[report]'")
    assert not (run_dir / "report").exists()


def test_report_pngs_need_matplotlib(blocker: Path, run_dir: Path, tmp_path: Path) -> None:
    done = paretotune(blocker, "report", str(run_dir), "--out", str(tmp_path / "r"), block=("matplotlib",))
    assert error(done) == ("paretotune: error: PNG output needs matplotlib: pip install 'paretotune[report]' "
                           "(or pass --no-png)")
    assert not (tmp_path / "r").exists()  # nothing half-made: no page without its PNGs, no empty folder
    done = paretotune(blocker, "report", str(run_dir), "--out", str(tmp_path / "r"), "--no-png",
                      block=("matplotlib",))
    assert done.returncode == 0 and (tmp_path / "r" / "report.html").is_file(), done.stderr


def test_parquet_export_needs_pyarrow(blocker: Path, run_dir: Path, tmp_path: Path) -> None:
    needs = ("paretotune: error: --format parquet needs pyarrow: pip install 'paretotune[parquet]' "
             "(or use --format csv)")
    done = paretotune(blocker, "export", str(run_dir), "--format", "parquet", "--out",
                      str(tmp_path / "sub" / "x.parquet"))
    assert error(done) == needs and not (tmp_path / "sub").exists()  # no empty folder, no empty file
    assert error(paretotune(blocker, "export", str(run_dir), "--format", "parquet")) == needs
    assert not (run_dir / "export").exists()
    done = paretotune(blocker, "export", str(run_dir), "--format", "csv", "--out", str(tmp_path / "x.csv"))
    assert done.returncode == 0 and (tmp_path / "x.csv").is_file(), done.stderr


@pytest.mark.parametrize("package", ["fastapi", "uvicorn"])
def test_serve_needs_the_service_extra(blocker: Path, tmp_path: Path, package: str) -> None:
    done = paretotune(blocker, "serve", "--workdir", str(tmp_path / "w"), "--port", "0", block=(package,))
    assert error(done) == f"paretotune: error: 'paretotune serve' needs {package}: pip install 'paretotune[service]'"


def test_the_ray_backend_needs_ray(blocker: Path, tmp_path: Path) -> None:
    spec = yaml.safe_load((ROOT / "configs" / "quickstart.yaml").read_text())
    spec["execution"] = {"backend": "ray"}
    (tmp_path / "ray.yaml").write_text(yaml.safe_dump(spec))
    done = paretotune(blocker, "run", str(tmp_path / "ray.yaml"), "--out", str(tmp_path / "run"), "--quiet")
    assert error(done) == (f"paretotune: error: {tmp_path / 'ray.yaml'}: execution.backend: 'ray' needs ray: "
                           "pip install 'paretotune[ray]' (or use backend: local) "
                           f"(nothing was kept: {tmp_path / 'run'} removed)")
