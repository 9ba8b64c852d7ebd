"""Shipped ACFs applied at compile time (``paretotune exec``, ``paretotune.shipped_acfs``): real Triton AOT compiles
for sm_90 in a real program, real ptxas 13.3, real CompileIQ ACFs. Each build is compared by its machine code
(the cubin's ``.text`` section) with the plain build and with Triton's own ``--apply-controls`` build."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paretotune.toolchain.ptxas import find_ptxas
from paretotune.ship.shipped_acfs import add_entry, load_index

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PROGRAM = HERE / "shipped_program.py"
KERNELS = HERE / "shipped_kernels.py"
ACF_A = ROOT / "tests" / "fixtures" / "acfs" / "regalloc_sensitive.acf"  # a CompileIQ sample


@pytest.fixture(scope="module")
def acf_b(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second CompileIQ sample (offline space), other than ACF_A."""
    from compileiq.ciq import Search
    from compileiq.search_spaces.compilers import PtxasSearchSpace
    from compileiq.types import SearchConfiguration, WorkerTypes

    if not os.environ.get("CIQ_SEARCH_SPACES_DIR"):
        pytest.skip("set CIQ_SEARCH_SPACES_DIR to a folder with CompileIQ's ptxas 13.3 search space")
    search = Search(objective_function=lambda _c: 0.0, search_space=PtxasSearchSpace(version="13.3"),
                    search_config=SearchConfiguration(problem_type="min", pool_size=6, generations=1),
                    worker_type=WorkerTypes.MANUAL)
    data = next(d for d in (bytes.fromhex(h) for h in search.sample(4)) if d != ACF_A.read_bytes())
    path = tmp_path_factory.mktemp("acf") / "b.acf"
    path.write_bytes(data)
    return path


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The program's environment: our ptxas (as every paretotune build has it), a fresh Triton cache unless
    ``TRITON_CACHE_DIR_FIXED`` names one."""
    ptxas = str(find_ptxas().path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "TRITON_PTXAS_PATH": ptxas, "TRITON_PTXAS_BLACKWELL_PATH": ptxas, "TRITON_DEFAULT_FP_FUSION": "1",
           "PARETOTUNE_EXEC_CACHE": str(tmp_path / "exec-cache"), **extra}
    fresh = tmp_path / f"triton-cache-{len(list(tmp_path.glob('triton-cache-*')))}"
    env["TRITON_CACHE_DIR"] = env.pop("TRITON_CACHE_DIR_FIXED", str(fresh))  # the user's cache, else a fresh one
    Path(env["TRITON_CACHE_DIR"]).mkdir(exist_ok=True)
    return env


def _program(tmp_path: Path, specs: list[str], prefix: list[str] | None = None,
             **env: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run the program (under ``prefix``, e.g. ``paretotune exec ...``): (the process, its builds by spec)."""
    out = tmp_path / f"builds-{len(list(tmp_path.glob('builds-*')))}.json"
    done = subprocess.run([*(prefix or []), sys.executable, str(PROGRAM), str(out), *specs], env=_env(tmp_path, **env),
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    return done, (json.loads(out.read_text()) if out.exists() else {})


def _exec(folder: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "paretotune.cli", "exec", "--acfs", str(folder), *options, "--"]


def _lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("paretotune")]


def test_the_key_matches_only_the_validated_build(tmp_path: Path) -> None:
    """One shipped entry (add, BLOCK 1024, sm_90a, this ptxas) plus entries whose PTX matches but whose arch or
    ptxas release does not: only the validated build gets the ACF (the same machine code as Triton's own
    ``--apply-controls`` build); another source, shape bucket, target, arch or ptxas each builds exactly as plain.
    The key ignores where the source file lives and its line numbers (the same code elsewhere, a comment added:
    Triton builds it again, and it still matches)."""
    edited = tmp_path / "edited" / "shipped_kernels.py"
    edited.parent.mkdir()
    edited.write_text(KERNELS.read_text().replace("mask=mask) + tl.load(y", "mask=mask) - tl.load(y"))
    moved = tmp_path / "moved" / "shipped_kernels.py"
    moved.parent.mkdir()
    moved.write_text(KERNELS.read_text().replace("    mask = i < n\n", "    # a comment: Triton's cache key differs\n"
                                                                        "    mask = i < n\n", 1))
    validated, others = f"{KERNELS}:add:1024:90", {
        "source": f"{edited}:add:1024:90", "bucket": f"{KERNELS}:add:512:90", "target": f"{KERNELS}:add:1024:80",
        "arch": f"{KERNELS}:scale:1024:90", "ptxas": f"{KERNELS}:add:256:90"}
    specs = [validated, *others.values()]
    plain_run, plain = _program(tmp_path, [*specs, f"{validated}:{ACF_A}"])
    assert plain_run.returncode == 0, plain_run.stderr[-3000:]
    reference = plain[f"{validated}:{ACF_A}"]["text"]
    assert reference != plain[validated]["text"], "the ACF must change this kernel's machine code"

    shipped = tmp_path / "shipped"
    version = find_ptxas().version
    add_entry(shipped, ptx=plain[validated]["ptx"], arch="sm_90a", ptxas_version=version, acf=ACF_A.read_bytes())
    add_entry(shipped, ptx=plain[others["arch"]]["ptx"], arch="sm_100a", ptxas_version=version, acf=ACF_A.read_bytes())
    add_entry(shipped, ptx=plain[others["ptxas"]]["ptx"], arch="sm_90a", ptxas_version="13.3.0",
              acf=ACF_A.read_bytes())

    run, built = _program(tmp_path, [*specs, f"{moved}:add:1024:90"], _exec(shipped, "--verbose"), PROG_EXIT="3")
    assert run.returncode == 3, run.stderr[-3000:]
    assert built[validated]["text"] == reference
    assert built[f"{moved}:add:1024:90"]["text"] == reference
    for why, spec in others.items():
        assert built[spec]["text"] == plain[spec]["text"], f"{why}: the build changed"
    lines = _lines(run.stderr)
    assert sum("applied" in line for line in lines) == 2, lines
    assert any("scale" in line and "other arch (entry for sm_100a)" in line for line in lines), lines
    assert any(f"other ptxas version (entry for 13.3.0, ptxas is {version})" in line for line in lines), lines
    assert sum("no entry for this PTX" in line for line in lines) == 3, lines  # source, bucket, target
    assert lines[-1] == "paretotune exec: 2 of 7 kernel builds got a shipped ACF"


@pytest.mark.parametrize("damage", ["tampered", "missing"])
def test_a_tampered_or_missing_acf_is_refused_in_one_line_and_the_build_falls_back(tmp_path: Path,
                                                                                     damage: str) -> None:
    spec = f"{KERNELS}:add:1024:90"
    _, plain = _program(tmp_path, [spec])
    shipped = tmp_path / "shipped"
    entry = add_entry(shipped, ptx=plain[spec]["ptx"], arch="sm_90a", ptxas_version=find_ptxas().version,
                      acf=ACF_A.read_bytes())
    if damage == "tampered":
        (shipped / entry["acf"]).write_bytes(ACF_A.read_bytes()[:-1] + b"\0")
    else:
        (shipped / entry["acf"]).unlink()
    run, built = _program(tmp_path, [spec], _exec(shipped))
    assert run.returncode == 0, run.stderr[-3000:]
    assert built[spec]["text"] == plain[spec]["text"]
    lines = _lines(run.stderr)
    expected = "does not hash to its name (tampered)" if damage == "tampered" else "is missing"
    assert len(lines) == 1 and lines[0].startswith("paretotune exec: add ") and expected in lines[0], lines


def test_two_kernels_in_one_process_each_get_only_their_own_acf(tmp_path: Path, acf_b: Path) -> None:
    """Shipped from the validated builds by ``add_compiled``, applied by the context manager: each kernel's
    machine code is its own ACF's build, not the other's."""
    add, scale = f"{KERNELS}:add:1024:90", f"{KERNELS}:scale:1024:90"
    shipped = tmp_path / "shipped"
    ship, _ = _program(tmp_path, [f"{add}:{ACF_A}", f"{scale}:{acf_b}"], PROG_SHIP=str(shipped))
    assert ship.returncode == 0, ship.stderr[-3000:]
    entries = load_index(shipped)
    assert sorted(e["kernel"] for e in entries) == ["add", "scale"]
    assert all(e["arch"] == "sm_90a" and e["evidence"]["speedup"] == 1.25 for e in entries)
    _, reference = _program(tmp_path, [f"{add}:{ACF_A}", f"{scale}:{acf_b}", f"{add}:{acf_b}", f"{scale}:{ACF_A}"])

    log = tmp_path / "decisions.jsonl"
    run, built = _program(tmp_path, [add, scale], PROG_CONTEXT=f"{shipped}:{log}")
    assert run.returncode == 0, run.stderr[-3000:]
    assert built[add]["text"] == reference[f"{add}:{ACF_A}"]["text"]
    assert built[scale]["text"] == reference[f"{scale}:{acf_b}"]["text"]
    decisions = {d["kernel"]: d["acf"] for d in map(json.loads, log.read_text().splitlines())}
    names = {p: hashlib.sha256(p.read_bytes()).hexdigest() + ".acf" for p in (ACF_A, acf_b)}
    assert decisions == {"add": names[ACF_A], "scale": names[acf_b]}
    # each kernel's two builds differ, so a swapped or a missing ACF would fail the checks above
    assert reference[f"{add}:{ACF_A}"]["text"] != reference[f"{add}:{acf_b}"]["text"]
    assert reference[f"{scale}:{acf_b}"]["text"] != reference[f"{scale}:{ACF_A}"]["text"]


def test_a_bad_shipped_folder_stops_exec_before_the_program_starts(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    program = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "acfs.json").write_text(json.dumps({"entries": [
        {"ptx_sha256": "00", "arch": "sm_90a", "ptxas_version": "13.3.73", "acf": "a.acf", "kernel": "k"}]}))
    for folder, message in ((tmp_path / "absent", "no such folder"),
                            (tmp_path / "bad", "entries[0].ptx_sha256: not a sha256 in hex")):
        done = subprocess.run([*_exec(folder), *program], env=_env(tmp_path), capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2 and not marker.exists(), done.stderr
        assert len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr


def test_exec_builds_in_a_triton_cache_of_its_own(tmp_path: Path) -> None:
    """Triton's cache key does not hold what the wrapper did: with the user's cache shared, the plain cubin
    cached first would be served under exec (no ACF), and the ACF'd one to plain runs after."""
    spec = f"{KERNELS}:add:1024:90"
    cache = tmp_path / "users-cache"
    _, plain = _program(tmp_path, [spec, f"{spec}:{ACF_A}"], TRITON_CACHE_DIR_FIXED=str(cache))
    shipped = tmp_path / "shipped"
    add_entry(shipped, ptx=plain[spec]["ptx"], arch="sm_90a", ptxas_version=find_ptxas().version,
              acf=ACF_A.read_bytes())
    run, built = _program(tmp_path, [spec], _exec(shipped), TRITON_CACHE_DIR_FIXED=str(cache))
    assert run.returncode == 0, run.stderr[-3000:]
    assert built[spec]["text"] == plain[f"{spec}:{ACF_A}"]["text"]
    _, after = _program(tmp_path, [spec], TRITON_CACHE_DIR_FIXED=str(cache))
    assert after[spec]["text"] == plain[spec]["text"]


def test_exec_refuses_a_program_it_cannot_start_and_passes_on_a_signal(tmp_path: Path) -> None:
    spec = f"{KERNELS}:add:1024:90"
    _, plain = _program(tmp_path, [spec])
    shipped = tmp_path / "shipped"
    add_entry(shipped, ptx=plain[spec]["ptx"], arch="sm_90a", ptxas_version=find_ptxas().version,
              acf=ACF_A.read_bytes())
    missing = subprocess.run([*_exec(shipped), str(tmp_path / "no-such-program")], env=_env(tmp_path),
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "command not found" in missing.stderr
    killed = subprocess.run([*_exec(shipped), sys.executable, "-c", "import os, signal; os.kill(os.getpid(), 9)"],
                            env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert killed.returncode == 128 + 9, killed.stderr
