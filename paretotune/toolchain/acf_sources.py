"""Finite ACF lists: files named in the campaign, or a zip pack of ACFs (a CompileIQ booster pack).

A finite list is searched as one categorical choice whose first option is always "no ACF" (the compiler's
defaults), as Helion does with ``""`` in ``autotune_search_acf``: an ACF from a pack made for another kernel
can make things worse (the reference notes a 2x slowdown), so "none of them" must stay a possible answer.

Options are de-duplicated by content (the run stores ACFs by sha256 anyway), keep the order given, and are
read completely here, so a missing or empty file fails before the search starts rather than mid-campaign.
Whether ptxas accepts an ACF is not checked here: a rejected ACF is a failed candidate, which is data.
"""
from __future__ import annotations

import hashlib
import stat
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from paretotune.errors import UserError
from paretotune.text_file import not_a_file

MAX_ACF_BYTES = 1 << 20  # sampled PTXAS 13.3 ACFs are ~2.3 KiB; anything near 1 MiB is not an ACF
SUMS_FILE = "SHA256SUMS"


@dataclass(frozen=True)
class AcfOption:
    """One choice of a finite ACF list: ``data=None`` (named ``""``) is the no-ACF baseline."""

    name: str  # file path or pack member, for people reading results; "" for no ACF
    data: bytes | None

    @property
    def sha256(self) -> str | None:
        return None if self.data is None else hashlib.sha256(self.data).hexdigest()


NO_ACF = AcfOption(name="", data=None)


def acf_options(files: Sequence[str] | None, pack: str | None, base_dir: Path,
                where: str = "acf") -> tuple[AcfOption, ...]:
    """The finite list a campaign names (``acf.files`` or ``acf.pack``, the pack first), with the no-ACF option
    first.

    Relative paths are taken from ``base_dir`` (the campaign file's folder). Raises UserError naming the
    field and the file when something cannot be read or is not plausibly an ACF.
    """
    if pack is not None:
        found = read_pack(_resolve(pack, base_dir), f"{where}.pack")
    elif files is not None:
        found = read_files(files, base_dir, f"{where}.files")
    else:
        raise UserError(f"{where}: no finite ACF list (give acf.files or acf.pack)")
    return finite_list(found)


def finite_list(found: Iterable[AcfOption]) -> tuple[AcfOption, ...]:
    """``NO_ACF`` first, then the given options with content duplicates (and explicit no-ACFs) dropped."""
    out, seen = [NO_ACF], set()
    for option in found:
        if option.data is None or option.sha256 in seen:
            continue
        seen.add(option.sha256)
        out.append(option)
    return tuple(out)


def read_files(entries: Sequence[str], base_dir: Path, where: str) -> list[AcfOption]:
    """Each entry names one ACF file, relative to ``base_dir`` unless absolute."""
    if not entries:
        raise UserError(f"{where}: the list is empty (name at least one .acf file, or use acf.pack)")
    out: list[AcfOption] = []
    for i, entry in enumerate(entries):
        at = f"{where}[{i}]"
        path = _resolve(entry, base_dir)
        problem = not_a_file(path)
        if problem == "missing":
            raise UserError(f"{at}: no such ACF file: {path}")
        if problem:
            raise UserError(f"{at}: {path}: not a regular file ({problem})")
        out.append(AcfOption(name=str(path), data=_checked(_read(path, at), f"{at}: {path}")))
    return out


def read_pack(path: Path, where: str) -> list[AcfOption]:
    """Every ``*.acf`` member of a zip, in sorted member order, checked against ``SHA256SUMS`` if present.

    Booster packs ship a catalog JSON and a ``SHA256SUMS`` file next to the ACFs; other members are ignored.
    """
    problem = not_a_file(path)
    if problem == "missing":
        raise UserError(f"{where}: no such pack: {path}")
    if problem:
        raise UserError(f"{where}: {path}: not a regular file ({problem})")
    try:
        with zipfile.ZipFile(path) as pack:
            members = sorted((m for m in pack.infolist() if _is_acf_member(m)), key=lambda m: m.filename)
            if not members:
                names = ", ".join(m.filename for m in pack.infolist()[:5]) or "nothing"
                raise UserError(f"{where}: {path} holds no .acf file (it has: {names})")
            sums = _sums(pack)
            out = []
            for m in members:
                at = f"{where}: {path}!{m.filename}"
                if m.file_size > MAX_ACF_BYTES:
                    raise UserError(f"{at}: {m.file_size} bytes, too large to be an ACF")
                data = _checked(pack.read(m), at)
                want = sums.get(PurePosixPath(m.filename).name) or sums.get(m.filename)
                if want is not None and want != hashlib.sha256(data).hexdigest():
                    raise UserError(f"{at}: sha256 does not match {SUMS_FILE} (corrupt or altered pack)")
                out.append(AcfOption(name=f"{path.name}!{m.filename}", data=data))
            return out
    except zipfile.BadZipFile:
        raise UserError(f"{where}: {path} is not a zip file") from None


def _is_acf_member(m: zipfile.ZipInfo) -> bool:
    name = PurePosixPath(m.filename)
    return (not m.is_dir() and name.suffix.lower() == ".acf" and "__MACOSX" not in name.parts
            and not name.name.startswith("."))


def _sums(pack: zipfile.ZipFile) -> dict[str, str]:
    """``sha256  name`` lines of a SHA256SUMS member anywhere in the pack (sha256sum's format)."""
    out: dict[str, str] = {}
    for m in pack.infolist():
        if PurePosixPath(m.filename).name != SUMS_FILE:
            continue
        for line in pack.read(m).decode("utf-8", errors="replace").splitlines():
            parts = line.split(maxsplit=1)
            if len(parts) == 2 and len(parts[0]) == 64:
                out[parts[1].strip().lstrip("*")] = parts[0].lower()
    return out


def _resolve(entry: str, base_dir: Path) -> Path:
    path = Path(entry).expanduser()
    return path if path.is_absolute() else base_dir / path


def _read(path: Path, at: str) -> bytes:
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{at}: {path} is not a regular file")
        size = st.st_size
        if size > MAX_ACF_BYTES:
            raise UserError(f"{at}: {path} is {size} bytes, too large to be an ACF")
        return path.read_bytes()
    except OSError as exc:
        raise UserError(f"{at}: cannot read {path} ({exc.strerror})") from None


def _checked(data: bytes, at: str) -> bytes:
    if not data:
        raise UserError(f"{at}: empty file (an ACF is a binary file written by CompileIQ)")
    if _looks_like_text(data):
        raise UserError(f"{at}: a text file, not an ACF (ACFs are encrypted binary files written by CompileIQ)")
    return data


def _looks_like_text(data: bytes) -> bool:
    """ACFs are encrypted, so their bytes look random; a file that decodes as printable UTF-8 is not one."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    printable = sum(ch.isprintable() or ch in "\n\r\t" for ch in text)
    return printable >= 0.95 * len(text)
