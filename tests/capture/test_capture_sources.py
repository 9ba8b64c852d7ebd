"""``paretotune capture`` finds a kernel wherever the program imported it from, and its campaign resolves from
anywhere: run under ``TRITON_INTERPRET=1`` on the CPU, one program (written here) calls a kernel of each form:

- its own ``__main__`` file, which imports a module of its folder;
- a package found through a ``sys.path`` edit, whose kernel module imports a sibling relatively;
- a namespace package (no ``__init__.py``) found through a ``sys.path`` edit, importing a sibling absolutely;
- a package on ``PYTHONPATH`` (the program's only);
- a package installed by pip into a folder on the program's ``PYTHONPATH`` only (site-packages, simulated);
- a kernel made inside a function, and kernels whose code has no source file (a notebook cell, exec'd code):
  listed with a one-line reason each, no campaign.

The campaigns are then resolved as ``paretotune run`` resolves them, in a fresh process whose working
directory and ``PYTHONPATH`` are neither the program's; one is run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _kernel(name: str, op: str, header: str = "") -> str:
    return textwrap.dedent(f'''\
        import triton
        import triton.language as tl
        {header}

        @triton.jit
        def {name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.store(out_ptr + offs, {op}, mask=offs < n)
        ''')


CELL = "/tmp/ipykernel_4242/1234.py"  # where Jupyter says a cell's code is: no such file
PROGRAM = textwrap.dedent(f'''\
    """Calls one kernel of each form (see the test's docstring)."""
    import linecache
    import os
    import sys

    HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(HERE, "..", "ext"))
    sys.path.append(os.path.join(HERE, "..", "ns"))

    import torch
    import triton
    import triton.language as tl

    from appconsts import SHIFT
    from extk.ops import twice
    from nsk.sub.kern import triple
    from ppk.ops import plus_one
    from sitek.ops import minus_one


    @triton.jit
    def halve(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 0.5 + SHIFT, mask=offs < n)


    def make_kernel():
        @triton.jit
        def shift(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 3.0, mask=offs < n)
        return shift


    def from_source(code, filename):
        """A kernel whose code has no file: a notebook cell (its lines known to linecache, as Jupyter does)."""
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        namespace = {{"__name__": "__main__"}}
        exec(compile(code, filename, "exec"), namespace)
        return namespace


    CELL_CODE = {_kernel("cell_kernel", "x - 2.0")!r}
    EXEC_CODE = {_kernel("exec_kernel", "x * 4.0")!r}


    def main():
        x = torch.randn(1000)
        kernels = [halve, twice, triple, plus_one, minus_one, make_kernel(),
                   from_source(CELL_CODE, {CELL!r})["cell_kernel"], from_source(EXEC_CODE, "<exec>")["exec_kernel"]]
        for kernel in kernels:
            out = torch.empty(1000)
            kernel[(4,)](x, out, 1000, BLOCK=256)
            print(kernel.fn.__name__, f"{{float(out.sum()):.4f}}")


    if __name__ == "__main__":
        main()
    ''')


def _wheel(folder: Path) -> Path:
    """A wheel of the package ``sitek`` (made here: pip installs it without a build backend or an index)."""
    files = {"sitek/__init__.py": "", "sitek/ops.py": _kernel("minus_one", "x - 1.0"),
             "sitek-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: sitek\nVersion: 0.1\n",
             "sitek-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                          "Tag: py3-none-any\n"}
    files["sitek-0.1.dist-info/RECORD"] = "".join(f"{name},,\n" for name in files) + "sitek-0.1.dist-info/RECORD,,\n"
    path = folder / "sitek-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
    return path


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "PYTHONPATH")}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    world = tmp_path_factory.mktemp("world")
    _write(world / "app" / "program.py", PROGRAM)
    constexpr = "import triton.language as tl\n\n{} = tl.constexpr({})\n"  # a global a Triton kernel may read
    _write(world / "app" / "appconsts.py", constexpr.format("SHIFT", 1.0))
    _write(world / "ext" / "extk" / "__init__.py", "")
    _write(world / "ext" / "extk" / "consts.py", constexpr.format("SCALE", 2.0))
    _write(world / "ext" / "extk" / "ops.py", _kernel("twice", "x * SCALE", "from .consts import SCALE"))
    _write(world / "ns" / "nsk" / "sub" / "consts.py", constexpr.format("SCALE", 3.0))  # nsk, nsk/sub: no __init__.py
    _write(world / "ns" / "nsk" / "sub" / "kern.py", _kernel("triple", "x * SCALE", "from nsk.sub.consts import SCALE"))
    _write(world / "pp" / "ppk" / "__init__.py", "")
    _write(world / "pp" / "ppk" / "ops.py", _kernel("plus_one", "x + 1.0"))
    site = world / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                          "--target", str(site), str(_wheel(world))], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    env = _clean_env(TRITON_INTERPRET="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(world / "pp"), str(site)])
    done = subprocess.run([sys.executable, "-m", "paretotune.cli", "capture", "--out", "cap", "--generations", "1",
                           "--", "python", "app/program.py"], cwd=world, env=env, capture_output=True, text=True,
                          timeout=600)
    out = world / "cap"
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").is_file() else {"kernels": []}
    return {"world": world, "done": done, "out": out, "rows": {r["kernel"]: r for r in summary["kernels"]}}


@pytest.fixture(scope="module")
def resolved(world: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each written campaign resolved as `paretotune run` resolves it (its kernel imported in a forked child
    first, then here), from another folder, with none of the program's paths: campaign stem -> None or the
    error; and the file each kernel's module was loaded from."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    script = textwrap.dedent('''\
        import inspect, json, sys
        from paretotune.campaign.load import load_campaign
        from paretotune.campaign.resolve import make_adapter
        from paretotune.errors import UserError
        out = {}
        for path in sys.argv[1:]:
            try:
                adapter = make_adapter(load_campaign(path), trial_import=True)
                kernel = adapter.spec.fn
                while not hasattr(kernel, "__code__"):
                    kernel = kernel.fn
                out[path] = {"error": None, "file": inspect.getfile(kernel)}
            except UserError as exc:
                out[path] = {"error": str(exc)}
        print(json.dumps(out))
        ''')
    files = sorted(str(p) for p in world["out"].glob("*.yaml"))
    done = subprocess.run([sys.executable, "-c", script, *files], cwd=elsewhere, env=_clean_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return {Path(k).stem: v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def test_the_program_ran_unchanged_and_every_kernel_is_listed(world: dict[str, Any]) -> None:
    done = world["done"]
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()[:8]] == [
        "halve", "twice", "triple", "plus_one", "minus_one", "shift", "cell_kernel", "exec_kernel"]
    assert set(world["rows"]) == {"halve", "twice", "triple", "plus_one", "minus_one", "shift", "cell_kernel",
                                  "exec_kernel"}


@pytest.mark.parametrize(("kernel", "file"), [
    ("halve", "app/program.py"),  # __main__, importing a module of its own folder
    ("twice", "ext/extk/ops.py"),  # sys.path edit; a relative import
    ("triple", "ns/nsk/sub/kern.py"),  # namespace package through a sys.path edit; an absolute sibling import
    ("plus_one", "pp/ppk/ops.py"),  # PYTHONPATH (the program's only)
    ("minus_one", "site/sitek/ops.py"),  # installed by pip, on the program's PYTHONPATH only
])
def test_each_kernel_is_named_by_its_file_and_resolves_from_anywhere(world: dict[str, Any],
                                                                       resolved: dict[str, Any], kernel: str,
                                                                       file: str) -> None:
    row = world["rows"][kernel]
    assert row["campaign"] == f"{kernel}.yaml", row["skipped"]
    source = yaml.safe_load((world["out"] / f"{kernel}.yaml").read_text())["kernel"]["source"]
    where, _, name = source.rpartition(":")
    assert (world["out"] / where).resolve() == (world["world"] / file).resolve() and name == kernel
    assert resolved[kernel]["error"] is None, resolved[kernel]["error"]
    assert Path(resolved[kernel]["file"]).resolve() == (world["world"] / file).resolve()


@pytest.mark.parametrize(("kernel", "reason"), [
    ("shift", "defined inside make_kernel() as make_kernel.<locals>.shift"),
    ("cell_kernel", f"no source file ({CELL}"),
    ("exec_kernel", "no source file (<exec>"),
])
def test_a_kernel_no_campaign_can_reach_is_listed_with_a_one_line_reason(world: dict[str, Any], kernel: str,
                                                                           reason: str) -> None:
    row = world["rows"][kernel]
    assert row["campaign"] is None and reason in row["skipped"]
    lines = [line for line in world["done"].stdout.splitlines() if line.startswith(f"  {kernel} (")]
    assert len(lines) == 1 and reason in lines[0]


def test_paretotune_run_completes_a_campaign_of_a_kernel_found_through_a_sys_path_edit(
        world: dict[str, Any], tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "paretotune.cli", "run", str(world["out"] / "twice.yaml"),
                           "--out", str(tmp_path / "run"), "--quiet"], cwd=tmp_path, env=_clean_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(records) > 1 and all(r["status"] == "ok" for r in records)


def test_capture_on_a_cpu_without_the_interpreter_says_to_set_it(tmp_path: Path) -> None:
    program = tmp_path / "p.py"
    program.write_text("print('ran')\n")
    done = subprocess.run([sys.executable, "-m", "paretotune.cli", "capture", "--out", "cap", "--", "python",
                           str(program)], cwd=tmp_path, env=_clean_env(CUDA_VISIBLE_DEVICES=""),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "ran" not in done.stdout
    assert done.stderr.count("\n") == 1 and "TRITON_INTERPRET=1" in done.stderr, done.stderr
    assert not (tmp_path / "cap").exists()
