"""Content-hashed ACF files and their version records."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from paretotune.errors import ToolchainError
from paretotune.toolchain.acf import AcfStore


def test_files_are_named_by_content_and_written_once(tmp_path: Path) -> None:
    store = AcfStore(tmp_path / "acf")
    a = store.put(b"first", ptxas_version="13.3", target="sm_90", source="compileiq")
    assert a.sha256 == hashlib.sha256(b"first").hexdigest()
    assert store.path(a.sha256).read_bytes() == b"first"
    again = store.put(b"first", ptxas_version="13.3", target="sm_90", source="somewhere else")
    assert again.sha256 == a.sha256 and store.record(a.sha256).source == "compileiq"  # first record kept
    b = store.put(b"second", ptxas_version="13.3", target="sm_90", source="compileiq")
    assert b.sha256 != a.sha256 and store.path(b.sha256) != store.path(a.sha256)
    assert sorted(p.name for p in (tmp_path / "acf").glob("*.acf")) == sorted([f"{a.sha256}.acf", f"{b.sha256}.acf"])


def test_hex_strings_from_compileiq_are_stored_as_bytes(tmp_path: Path) -> None:
    rec = AcfStore(tmp_path).put_hex("00ff10", ptxas_version="13.3", target="sm_90", source="compileiq")
    assert AcfStore(tmp_path).path(rec.sha256).read_bytes() == b"\x00\xff\x10"


def test_version_record_sits_next_to_the_acf(tmp_path: Path) -> None:
    store = AcfStore(tmp_path)
    rec = store.put(b"x", ptxas_version="13.3", target="sm_90", source="compileiq")
    data = json.loads((tmp_path / f"{rec.sha256}.json").read_text())
    assert data == {"sha256": rec.sha256, "ptxas_version": "13.3", "target": "sm_90", "source": "compileiq"}


def test_acf_for_another_ptxas_or_arch_is_refused(tmp_path: Path) -> None:
    store = AcfStore(tmp_path)
    sha = store.put(b"x", ptxas_version="13.3", target="sm_90", source="compileiq").sha256
    store.check_compatible(sha, "13.3.73", "sm_90")
    with pytest.raises(ToolchainError, match=r"made for ptxas 13\.3, but ptxas is 13\.4"):
        store.check_compatible(sha, "13.4.10", "sm_90")
    with pytest.raises(ToolchainError, match="made for sm_90, but the target is sm_100"):
        store.check_compatible(sha, "13.3.73", "sm_100")
