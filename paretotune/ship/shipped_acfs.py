"""A shipped-ACF folder (``acfs.json`` plus ``<sha256>.acf`` files) and the build environment that applies it.

The folder, as data::

    acfs.json  {"format": 1, "entries": [{"ptx_sha256": "<64 hex>", "arch": "sm_90a", "ptxas_version": "13.3.73",
                 "acf": "<sha256 of the ACF>.acf", "kernel": "<PTX entry name>", "evidence": {...}}, ...]}
    <sha256>.acf  the ACF bytes, named by their content hash (or acf/<sha256>.acf: ``paretotune ship``'s layout)

An entry applies to a ptxas build only when all three of its key fields match: the PTX's hash
(:func:`~paretotune.ship.ptxas_shim.ptx_key`: source, specialisation, constexprs, num_warps all end up in
the PTX), the target ptxas is given (Triton's ``--gpu-name``, e.g. ``sm_90a`` for capability 90) and the
ptxas release. ``evidence`` is free-form (the validation's speedup and CI where known).

:func:`shipped_environment` gives the variables that make every Triton compile in a process tree go through the
shim (:mod:`paretotune.ship.ptxas_shim`): ``TRITON_PTXAS_PATH``/``TRITON_PTXAS_BLACKWELL_PATH`` at a wrapper
script, and ``TRITON_CACHE_DIR`` at a cache of its own. Triton's cache key holds ``ptxas --version`` and the
options, not what the wrapper did, so in the user's usual cache an ACF'd cubin would be served to plain runs and
a plain cubin would keep an ACF from ever being applied; the cache is keyed by the folder's index (which names
every ACF by content), the shim's source and the real ptxas.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paretotune.errors import UserError
from paretotune.store.atomic import atomic_write
from paretotune.ship import ptxas_shim
from paretotune.ship.ptxas_shim import INDEX, kernel_name, ptx_key

FORMAT = 1
CACHE_ENV = "PARETOTUNE_EXEC_CACHE"  # where exec keeps its wrappers and Triton caches (default ~/.cache/paretotune)
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_REQUIRED = ("ptx_sha256", "arch", "ptxas_version", "acf", "kernel")


def load_index(folder: Path) -> list[dict[str, Any]]:
    """The folder's entries, checked field by field; UserError (one line naming the file and field) otherwise."""
    index = folder / INDEX
    if not folder.is_dir():
        raise UserError(f"--acfs {folder}: no such folder")
    try:
        data = json.loads(index.read_text())
    except FileNotFoundError:
        raise UserError(f"{index}: not found (a shipped-ACF folder holds acfs.json)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{index}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise UserError(f"{index}: entries: missing or not a list")
    if data.get("format", FORMAT) != FORMAT:
        raise UserError(f"{index}: format: {data.get('format')!r} is not {FORMAT}")
    for i, entry in enumerate(data["entries"]):
        where = f"{index}: entries[{i}]"
        if not isinstance(entry, dict):
            raise UserError(f"{where}: not an object")
        for name in _REQUIRED:
            if not isinstance(entry.get(name), str) or not entry[name]:
                raise UserError(f"{where}.{name}: missing or not a string")
        if not _HEX64.match(entry["ptx_sha256"]):
            raise UserError(f"{where}.ptx_sha256: not a sha256 in hex")
        if not (entry["acf"].endswith(".acf") and _HEX64.match(entry["acf"][:-4])):
            raise UserError(f"{where}.acf: not a <sha256>.acf file name")
        if "evidence" in entry and not isinstance(entry["evidence"], dict):
            raise UserError(f"{where}.evidence: not an object")
    return list(data["entries"])


def write_index(folder: Path, entries: list[dict[str, Any]]) -> None:
    """Write ``folder``'s index whole (a reader sees the old one or the new)."""
    atomic_write(folder / INDEX, json.dumps({"format": FORMAT, "entries": entries}, indent=2) + "\n")


def add_entry(folder: Path, *, ptx: str, arch: str, ptxas_version: str, acf: bytes,
              evidence: dict[str, Any] | None = None) -> dict[str, Any]:
    """Add (or replace: same PTX, arch and ptxas) the entry that applies ``acf`` to builds of ``ptx``; writes
    the ACF by content hash, then the index, each whole (a reader sees the old folder or the new)."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = load_index(folder) if (folder / INDEX).exists() else []
    name = hashlib.sha256(acf).hexdigest() + ".acf"
    have = [p for p in (folder / name, folder / "acf" / name) if p.is_file() and p.read_bytes() == acf]
    if not have:
        atomic_write(folder / name, acf)
    entry: dict[str, Any] = {"ptx_sha256": ptx_key(ptx), "arch": arch, "ptxas_version": ptxas_version, "acf": name,
                             "kernel": kernel_name(ptx)}
    if evidence:
        entry["evidence"] = evidence
    same = ("ptx_sha256", "arch", "ptxas_version")
    write_index(folder, [e for e in entries if any(e[k] != entry[k] for k in same)] + [entry])
    return entry


def add_compiled(folder: Path, compiled: Any, acf: bytes, *, ptxas_version: str | None = None,
                 evidence: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`add_entry` for a Triton ``CompiledKernel`` (``triton.compile``'s result, or a JIT function's
    cache entry): its PTX, the arch Triton gives ptxas for its target (Triton's own mapping, sm_90 -> sm_90a),
    and the ptxas paretotune builds with unless given."""
    from triton.backends.nvidia.compiler import sm_arch_from_capability

    from paretotune.toolchain.ptxas import find_ptxas

    arch = sm_arch_from_capability(int(compiled.metadata.target.arch))
    return add_entry(folder, ptx=compiled.asm["ptx"], arch=arch, evidence=evidence, acf=acf,
                     ptxas_version=ptxas_version or find_ptxas().version)


@dataclass(frozen=True)
class ShippedEnvironment:
    """What :func:`shipped_environment` made: the variables to set, the wrapper and the Triton cache it uses."""

    env: dict[str, str]
    wrapper: Path
    cache_dir: Path
    helion_heuristics: tuple[Path, ...] = ()  # shipped Helion AOT heuristics, first on Helion's lookup path
    helion_dir_kept: str | None = None  # the program's own HELION_HEURISTIC_DIR, left as it was (ours not used)


HELION_DIR_ENV = "HELION_HEURISTIC_DIR"  # where Helion looks first for ``_helion_aot_<file>_<device>_<cc>.py``


def shipped_environment(folder: Path, log: Path | None = None) -> ShippedEnvironment:
    """The variables under which Triton builds apply ``folder``'s ACFs (the index is checked first: UserError);
    writes the wrapper once per (folder content, shim, ptxas)."""
    from paretotune.toolchain.ptxas import find_ptxas

    folder = folder.resolve()
    load_index(folder)
    ptxas = find_ptxas()
    shim = Path(ptxas_shim.__file__).resolve()
    digest = hashlib.sha256(b"\0".join([(folder / INDEX).read_bytes(), shim.read_bytes(), str(folder).encode(),
                                        str(ptxas.path).encode(), ptxas.version.encode()])).hexdigest()[:16]
    root = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "paretotune") / "exec" / digest
    cache_dir = root / "triton"
    cache_dir.mkdir(parents=True, exist_ok=True)
    settings = {ptxas_shim.REAL_ENV: str(ptxas.path), ptxas_shim.VERSION_ENV: ptxas.version,
                ptxas_shim.ACFS_ENV: str(folder)}
    text = ("#!/bin/sh\n# written by paretotune exec: ptxas with the shipped ACFs of " + str(folder) + "\n"
            + "".join(f"export {k}={shlex.quote(v)}\n" for k, v in settings.items())
            + f"exec {shlex.quote(sys.executable)} -I {shlex.quote(str(shim))} \"$@\"\n")
    wrapper = root / "ptxas"
    if not wrapper.is_file() or wrapper.read_text() != text:
        atomic_write(wrapper, text, mode=0o755)
    # PARETOTUNE_PTXAS: a paretotune run started inside the program finds the real ptxas, not the wrapper (its
    # baseline builds must not get shipped ACFs)
    env = {"TRITON_PTXAS_PATH": str(wrapper), "TRITON_PTXAS_BLACKWELL_PATH": str(wrapper),
           "TRITON_CACHE_DIR": str(cache_dir), "PARETOTUNE_PTXAS": str(ptxas.path)}
    if log is not None:
        env[ptxas_shim.LOG_ENV] = str(log)
    # a shipped Helion heuristic carries the new configs and their ACFs: Helion finds it before the one beside
    # the kernel's source when the folder is its heuristic directory (a kernel without a shipped heuristic falls
    # back to its own). A directory the program already set is the program's choice and stays.
    heuristics = tuple(sorted(folder.glob("_helion_aot_*.py")))
    kept = os.environ.get(HELION_DIR_ENV) if heuristics else None
    if heuristics and kept is None:
        env[HELION_DIR_ENV] = str(folder)
    return ShippedEnvironment(env=env, wrapper=wrapper, cache_dir=cache_dir, helion_heuristics=heuristics,
                              helion_dir_kept=kept)


@contextlib.contextmanager
def shipped_acfs(folder: str | os.PathLike[str], log: str | os.PathLike[str] | None = None) -> Iterator[Path]:
    """Within the block, Triton (and Helion) compiles in this process and its children apply ``folder``'s ACFs
    (what ``paretotune exec --acfs`` does for a whole program); the previous variables come back after. Kernels
    this process compiled before the block keep the build they have (Triton holds them in memory). Yields the
    Triton cache the block builds into."""
    shipped = shipped_environment(Path(folder), Path(log) if log is not None else None)
    before = {name: os.environ.get(name) for name in shipped.env}
    os.environ.update(shipped.env)
    try:
        yield shipped.cache_dir
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def read_log(log: Path) -> list[dict[str, Any]]:
    """The shim's decisions, one per ptxas build (lines that are not JSON, e.g. cut by a crash, are skipped)."""
    out = []
    if log.is_file():
        for line in log.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
    return out
