"""A kernel named by its file (``path/to/file.py:name``) is imported as its program imported it: as part of its
package (relative imports work), or, in no package, with the modules beside it importable; a file beside it named
like a standard-library module does not shadow that module. Each case in a fresh process (``sys.path`` changes)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _resolve(source: str, tmp_path: Path, then: str = "",
             hash_seed: str = "random") -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(f'''\
        from pathlib import Path
        from paretotune.campaign.user_code import import_object
        obj = import_object({source!r}, Path({str(tmp_path)!r}), "kernel.source")
        print(obj.__module__, obj())
        {then}
        ''')
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT.parent, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": hash_seed})


def test_a_file_in_a_package_is_imported_as_part_of_it(tmp_path: Path) -> None:
    pkg = tmp_path / "lib" / "mykernels"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "consts.py").write_text("VALUE = 7\n")
    (pkg / "ops.py").write_text("from .consts import VALUE\n\n\ndef kernel():\n    return VALUE\n")
    done = _resolve("lib/mykernels/ops.py:kernel", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["mykernels.ops", "7"]


def test_a_plain_file_sees_the_modules_beside_it_but_shadows_nothing(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("VALUE = 3\n")
    (tmp_path / "tabnanny.py").write_text("raise RuntimeError('the standard library was shadowed')\n")
    (tmp_path / "kern.py").write_text("from helper import VALUE\n\n\ndef kernel():\n    return VALUE\n")
    done = _resolve("kern.py:kernel", tmp_path, then="import tabnanny; print(tabnanny.__file__)")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    assert lines[0].split()[1] == "3" and not lines[1].startswith(str(tmp_path)), done.stdout


def test_a_plain_file_gets_the_same_module_name_in_every_process(tmp_path: Path) -> None:
    """Helion's generated code imports a kernel's module by name where the kernel calls a function beside it, so
    the build workers and the GPU worker must name it alike, or their Triton sources differ (str hashes differ
    between processes: two hash seeds stand for two processes)."""
    (tmp_path / "plain.py").write_text("def kernel():\n    return 1\n")
    names = []
    for seed in ("1", "2"):
        done = _resolve("plain.py:kernel", tmp_path, hash_seed=seed)
        assert done.returncode == 0, done.stderr
        names.append(done.stdout.split()[0])
    assert names[0].startswith("paretotune_user_plain_") and names[0] == names[1], names
