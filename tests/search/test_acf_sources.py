"""Finite ACF lists from files and zip packs: the no-ACF option first, content de-duplication, clear errors."""
from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from paretotune.campaign.schema import AcfSpec
from paretotune.errors import UserError
from paretotune.toolchain.acf_sources import NO_ACF, acf_options, read_files, read_pack


def test_files_no_acf_first_and_deduplicated(acf_files: list[Path], sampled_acfs: list[bytes]) -> None:
    spec = AcfSpec(files=[str(p) for p in acf_files] + [str(acf_files[0])])
    options = acf_options(spec.files, spec.pack, Path("/"))
    assert options[0] == NO_ACF and options[0].name == "" and options[0].sha256 is None
    assert [o.data for o in options[1:]] == sampled_acfs  # order kept, the repeat dropped
    assert [o.sha256 for o in options[1:]] == [p.stem for p in acf_files]


def test_relative_files_resolve_from_campaign_folder(acf_files: list[Path]) -> None:
    base = acf_files[0].parent.parent
    options = acf_options([f"acfs/{acf_files[1].name}"], None, base)
    assert len(options) == 2 and options[1].sha256 == acf_files[1].stem


def test_pack_reads_acfs_only_and_checks_sums(acf_pack: Path, sampled_acfs: list[bytes]) -> None:
    options = acf_options(None, str(acf_pack), Path("/"))
    assert options[0] == NO_ACF
    assert [o.data for o in options[1:]] == sampled_acfs
    assert options[1].name == "pack.zip!softmax-pack/acf_0.acf"


def test_pack_with_altered_member_is_refused(tmp_path: Path, sampled_acfs: list[bytes]) -> None:
    path = tmp_path / "bad.zip"
    with zipfile.ZipFile(path, "w") as pack:
        pack.writestr("a.acf", sampled_acfs[0][:-1] + bytes([sampled_acfs[0][-1] ^ 0xFF]))  # always differs
        pack.writestr("SHA256SUMS", f"{hashlib.sha256(sampled_acfs[0]).hexdigest()}  a.acf\n")
    with pytest.raises(UserError, match=r"a\.acf: sha256 does not match SHA256SUMS"):
        read_pack(path, "acf.pack")


@pytest.mark.parametrize(("members", "message"), [
    ({"README.md": b"hi", "__MACOSX/._x.acf": b"junk"}, "holds no .acf file"),
    ({"x.acf": b""}, "empty file"),
])
def test_pack_without_usable_acfs(tmp_path: Path, members: dict[str, bytes], message: str) -> None:
    path = tmp_path / "p.zip"
    with zipfile.ZipFile(path, "w") as pack:
        for name, data in members.items():
            pack.writestr(name, data)
    with pytest.raises(UserError, match=message):
        read_pack(path, "acf.pack")


def test_not_a_zip_and_missing_files(tmp_path: Path) -> None:
    (tmp_path / "p.zip").write_text("not a zip")
    with pytest.raises(UserError, match="is not a zip file"):
        read_pack(tmp_path / "p.zip", "acf.pack")
    with pytest.raises(UserError, match=r"acf.files\[0\]: no such ACF file"):
        read_files(["missing.acf"], tmp_path, "acf.files")
    (tmp_path / "empty.acf").write_bytes(b"")
    with pytest.raises(UserError, match="empty file"):
        read_files(["empty.acf"], tmp_path, "acf.files")
