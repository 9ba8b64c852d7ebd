"""The ``ptxas`` that ``paretotune exec`` puts in front of the real one: a shipped ACF for exactly the PTX it was
validated on, and the real ptxas exactly as called for everything else.

Why a ptxas wrapper (Triton 3.9, ``triton/backends/nvidia/compiler.py``): ``make_cubin`` writes the kernel's PTX
to a temporary ``.ptx`` file and runs ``[knobs.nvidia.ptxas(_blackwell).path, ..., --gpu-name=sm_XXa, file.ptx,
-o file.ptx.o]``, the path read from ``$TRITON_PTXAS_PATH`` / ``$TRITON_PTXAS_BLACKWELL_PATH`` (sm_90 and newer)
on every compile. That is the one point where every Triton kernel (Helion's too) passes, in every process of the
tree (the variables are inherited), as final PTX: after the source, the signature's specialisation, the
constexprs and num_warps/num_stages are all baked in, so the PTX text itself is the kernel's fingerprint. The
other levers see less: ``ptx_options`` is per launch (needs the program's source), ``$PTXAS_OPTIONS`` gives one
option string to every kernel alike, and the stages-inspection hook (``knobs.runtime``) is one process's Python
state that a subprocess or a worker pool does not inherit.

Run as ``python -I ptxas_shim.py ARGS`` (stdlib only: it must start fast and cannot see the program's
``PYTHONPATH``), configured by the variables ``paretotune exec`` writes into its wrapper script. It never fails a
build that the real ptxas would pass: any doubt (no entry, another arch or ptxas, a tampered or missing ACF, an
unreadable index, ptxas failing with the ACF) builds exactly as called, and one JSON line in the log says why.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REAL_ENV = "PARETOTUNE_SHIM_REAL_PTXAS"  # the real ptxas ≥ 13.3
VERSION_ENV = "PARETOTUNE_SHIM_PTXAS_VERSION"  # its version, "13.3.73" (read once by exec, not per compile)
ACFS_ENV = "PARETOTUNE_SHIM_ACFS"  # the shipped folder: acfs.json and <sha256>.acf files
LOG_ENV = "PARETOTUNE_SHIM_LOG"  # where each compile's decision is appended as one JSON line

INDEX = "acfs.json"
_ENTRY_RE = re.compile(r"^\s*(?:\.visible\s+)?\.entry\s+([A-Za-z_$][\w$]*)", re.M)


def ptx_key(ptx: str) -> str:
    """sha256 of the PTX without its debug information (``.file`` and ``.loc`` lines, the ``.debug_*``
    sections at the end): those name the source file's path, folder and line numbers, which differ between the
    file paretotune validated in and the site-packages the program imports from (and Triton's cache returns the
    first compiler's paths), and they change only the cubin's line table. Every instruction, the kernel's
    signature and its ``.reqntid``/``.maxntid`` (num_warps) are kept: the key is the code ptxas compiles."""
    kept = []
    for line in ptx.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(".section") and stripped[len(".section"):].lstrip().startswith(".debug_"):
            break
        if not stripped.startswith((".file", ".loc")):
            kept.append(line)
    return hashlib.sha256("\n".join(kept).encode()).hexdigest()


def kernel_name(ptx: str) -> str:
    """The first ``.entry`` of the PTX (a Triton module has one), or '?'."""
    match = _ENTRY_RE.search(ptx)
    return match.group(1) if match else "?"


def ptx_arg_and_arch(args: list[str]) -> tuple[str | None, str | None]:
    """The ``.ptx`` input and the target (``--gpu-name=X``, ``--gpu-name X``, ``-arch=X``, ``-arch X``) of a
    ptxas command line; None where absent."""
    ptx = arch = None
    for i, arg in enumerate(args):
        for flag in ("--gpu-name", "-arch"):
            if arg == flag and i + 1 < len(args):
                arch = args[i + 1]
            elif arg.startswith(flag + "="):
                arch = arg.split("=", 1)[1]
        if arg.endswith(".ptx") and not arg.startswith("-"):
            ptx = arg
    return ptx, arch


def choose(acfs_dir: Path, key: str, arch: str, ptxas_version: str) -> tuple[Path | None, str]:
    """(the ACF to apply, why) for a build with this key, arch and ptxas: the ACF only when an entry matches
    all three and the file's content hashes to its name."""
    entries = json.loads((acfs_dir / INDEX).read_text())["entries"]
    same_ptx = [e for e in entries if e.get("ptx_sha256") == key]
    if not same_ptx:
        return None, "no entry for this PTX"
    same_arch = [e for e in same_ptx if e.get("arch") == arch]
    if not same_arch:
        return None, f"other arch (entry for {', '.join(sorted({str(e.get('arch')) for e in same_ptx}))})"
    same = [e for e in same_arch if e.get("ptxas_version") == ptxas_version]
    if not same:
        found = ", ".join(sorted({str(e.get("ptxas_version")) for e in same_arch}))
        return None, f"other ptxas version (entry for {found}, ptxas is {ptxas_version})"
    name = Path(str(same[0].get("acf"))).name
    acf = acfs_dir / name if (acfs_dir / name).is_file() else acfs_dir / "acf" / name  # ship puts them in acf/
    if not acf.is_file():
        return None, f"refused: ACF {name} is missing"
    if hashlib.sha256(acf.read_bytes()).hexdigest() + ".acf" != acf.name:
        return None, f"refused: ACF {name} does not hash to its name (tampered)"
    return acf, "applied"


def _given_acf(args: list[str], acfs_dir: Path, record: dict[str, object]) -> str:
    """Why a build that names its own ACF is left as called: a shipped Helion heuristic's config names one from
    the shipped folder (recorded as applied), or the program chose its own."""
    at = args.index("--apply-controls") + 1
    given = Path(args[at]) if at < len(args) else None
    if given is not None and given.resolve().parent in (acfs_dir.resolve(), (acfs_dir / "acf").resolve()):
        record["acf"] = given.name
        return "applied by the shipped heuristic's config"
    return "the build already has --apply-controls"


def _log(record: dict[str, object]) -> None:
    """Append one line (a single write under O_APPEND: lines from parallel compiles do not interleave)."""
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    line = (json.dumps(record, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def main(args: list[str]) -> int:
    real = os.environ[REAL_ENV]
    ptx_path, arch = ptx_arg_and_arch(args)
    if ptx_path is None or arch is None or not os.path.isfile(ptx_path):
        os.execv(real, [real, *args])  # --version, --help, anything but a PTX build: the real ptxas, untouched
    record: dict[str, object] = {"time": time.time(), "arch": arch, "pid": os.getpid()}
    try:
        ptx = Path(ptx_path).read_text()
        key = ptx_key(ptx)
        record.update(kernel=kernel_name(ptx), ptx_sha256=key)
        if "--apply-controls" in args:
            acf, why = None, _given_acf(args, Path(os.environ[ACFS_ENV]), record)
        else:
            acf, why = choose(Path(os.environ[ACFS_ENV]), key, arch, os.environ[VERSION_ENV])
    except Exception as exc:  # noqa: BLE001 - the shim must never be why a build fails
        acf, why = None, f"refused: {type(exc).__name__}: {exc}"
    if acf is not None:
        done = subprocess.run([real, *args, "--apply-controls", str(acf)], check=False)
        if done.returncode == 0:
            _log({**record, "acf": acf.name, "reason": "applied"})
            return 0
        why = f"refused: ptxas failed with ACF {acf.name} (exit {done.returncode}); built without it"
    _log({"acf": None, **record, "reason": why})
    if why.startswith("refused"):
        print(f"paretotune exec: {record.get('kernel', '?')}: {why}", file=sys.stderr)
    return subprocess.run([real, *args], check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
