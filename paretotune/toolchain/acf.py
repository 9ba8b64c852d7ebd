"""ACF files named by content hash, each with a record of the ptxas version and target it was made for.

Triton caches binaries by the ACF *path string*, so a path reused for new contents serves a stale binary;
content-hashed names make that impossible. ACFs from one ptxas release are rejected by another (13.3 vs
13.4), hence the version record checked before use.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from paretotune.errors import ToolchainError
from paretotune.store.atomic import atomic_write, atomic_write_json


@dataclass(frozen=True)
class AcfRecord:
    sha256: str
    ptxas_version: str  # major.minor of the search space / ptxas it was sampled for
    target: str  # e.g. sm_90
    source: str  # "compileiq", a file path, or a pack name


def acf_sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class AcfStore:
    """``<dir>/<sha256>.acf`` plus ``<sha256>.json``; writes are atomic and idempotent."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, sha: str) -> Path:
        return self.directory / f"{sha}.acf"

    def put(self, data: bytes, *, ptxas_version: str, target: str, source: str) -> AcfRecord:
        sha = acf_sha(data)
        record = AcfRecord(sha256=sha, ptxas_version=ptxas_version, target=target, source=source)
        dst = self.path(sha)
        if not dst.exists():  # the record is written first: an .acf never exists without its .json
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.directory / f"{sha}.json", asdict(record), sort_keys=True)
            atomic_write(dst, data)
        return record

    def put_hex(self, hex_string: str, **kw: str) -> AcfRecord:
        """CompileIQ hands ACFs over as hex strings (what its ``save_compiler_config`` writes)."""
        return self.put(bytes.fromhex(hex_string), **kw)

    def record(self, sha: str) -> AcfRecord:
        try:
            return AcfRecord(**json.loads((self.directory / f"{sha}.json").read_text()))
        except FileNotFoundError:
            raise ToolchainError(f"{self.path(sha)}: no version record (<sha>.json) next to the ACF") from None

    def check_compatible(self, sha: str, ptxas_version: str, target: str) -> None:
        """Refuse an ACF made for another ptxas major.minor or another architecture."""
        rec = self.record(sha)
        have = ".".join(ptxas_version.split(".")[:2])
        if rec.ptxas_version != have:
            raise ToolchainError(f"{self.path(sha)}: ACF made for ptxas {rec.ptxas_version}, but ptxas is {have}")
        if rec.target != target:
            raise ToolchainError(f"{self.path(sha)}: ACF made for {rec.target}, but the target is {target}")

