"""Benchmark scripts are users of the product: none edits ``sys.path`` or imports another script, except the one
shared module ``benchmarks/common.py`` (found because ``python benchmarks/NAME.py`` puts ``benchmarks/`` first on
``sys.path``; benchmarks/README.md). Checked on the source (AST), so no script is run."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SHARED = "common"


def scripts() -> list[Path]:
    """Every Python file under benchmarks/ but the recorded results."""
    return sorted(p for p in BENCHMARKS.rglob("*.py") if "results" not in p.relative_to(BENCHMARKS).parts)


def script_names() -> set[str]:
    return {p.stem for p in scripts()}


def offences(source: str, names: set[str]) -> list[str]:
    """What in ``source`` edits the import path or imports a benchmark script other than :data:`SHARED`."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Attribute) and node.attr == "path" and _is_name(node.value, "sys"):
            found.append(f"{where}: sys.path")
        elif isinstance(node, ast.Attribute) and node.attr == "addsitedir" and _is_name(node.value, "site"):
            found.append(f"{where}: site.addsitedir")
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "path" for a in node.names):
            found.append(f"{where}: from sys import path")
        elif isinstance(node, ast.Import):
            found += [f"{where}: import {a.name}" for a in node.names if _is_script(a.name, names)]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.append(f"{where}: relative import")
            elif node.module == "benchmarks":
                found += [f"{where}: from benchmarks import {a.name}" for a in node.names if a.name != SHARED]
            elif node.module and _is_script(node.module, names):
                found.append(f"{where}: from {node.module} import ...")
    return found


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_script(module: str, names: set[str]) -> bool:
    parts = module.split(".")
    if parts[0] == "benchmarks":
        return len(parts) > 1 and parts[1] != SHARED
    return parts[0] in names and parts[0] != SHARED


def test_there_are_scripts_to_check() -> None:
    assert len(scripts()) > 10 and (BENCHMARKS / f"{SHARED}.py").is_file()


@pytest.mark.parametrize("script", scripts(), ids=lambda p: str(p.relative_to(BENCHMARKS)))
def test_script_leaves_sys_path_alone_and_imports_no_other_script(script: Path) -> None:
    assert offences(script.read_text(), script_names()) == []


@pytest.mark.parametrize("source", [
    "import sys\nsys.path.insert(0, 'x')\n",
    "import sys\nsys.path[:0] = ['x']\n",
    "from sys import path\npath.append('x')\n",
    "import site\nsite.addsitedir('x')\n",
    "from bench_pretuned import versions\n",
    "import bench_capture\n",
    "def f():\n    from bench_ship import finish\n",
    "from benchmarks import bench_ship\n",
    "from benchmarks.bench_ship import finish\n",
    "from . import bench_ship\n",
])
def test_the_check_finds_each_kind_of_offence(source: str) -> None:
    assert offences(source, {"bench_pretuned", "bench_capture", "bench_ship", "common"})


@pytest.mark.parametrize("source", [
    "from common import versions\n",
    "import common\n",
    "from benchmarks import common\n",
    "from benchmarks.common import versions\n",
    "import paretotune\nfrom paretotune.front import open_run\n",
    "import os\nenv = {'PYTHONPATH': os.pathsep.join(['x'])}\n",
])
def test_the_check_lets_the_shared_module_and_the_product_through(source: str) -> None:
    assert offences(source, {"bench_pretuned", "common"}) == []
