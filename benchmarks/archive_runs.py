"""Pack a results folder's raw run folders into one deterministic ``runs.tar.xz`` beside its plain summaries.

A device call's folder under ``benchmarks/results/`` holds what a reader cites (README, summary JSON and CSV,
logs) and the raw run folders behind them (``results.jsonl``, ``run.json``, checkpoints, every ``.acf``): the
raw ones made up a third of the repository's lines. This script moves them into ``CALL/runs.tar.xz``, paths
inside relative to ``CALL/`` (``CALL/a/run/results.jsonl`` is ``a/run/results.jsonl`` inside), and leaves the
rest plain. The archive is the same bytes for the same files: names sorted, owner root, mtime fixed, modes
0644/0755, xz preset 9.

A raw run folder directly holds ``results.jsonl``, ``run.json``, a ``checkpoint*`` file or an ``.acf``; the
topmost such folder below ``CALL/`` goes in whole. Where ``CALL/`` is itself a run, everything but its
``README.md`` and top-level ``*.csv`` goes in. Archives a call already came back as (``*_runs.tgz``) are
merged in, each under its own stem (``call1_runs.tgz`` -> ``call1_runs/``). Every file is read back from the
archive and compared before anything is removed. A folder packed before and unpacked again is packed again as it
is; one whose files changed since (a run done again, as a table recorded over several sessions does) is refused,
unless ``--replace``: then the folder on disk replaces everything the archive held under its name. A run folder moved
or deleted after it was packed (a superseded run moved aside) stays in the archive under its old path, and unpacking
in place brings it back there: after unpacking, moving and packing again, ``--drop-gone`` takes out of the archive
every packed file that is no longer on disk (it refuses when none is: the archive was not unpacked).

    python benchmarks/archive_runs.py benchmarks/results/h200_2026-12-04a [CALL ...] [--dry-run] [--replace]
        [--drop-gone]
    tar -xJf benchmarks/results/CALL/runs.tar.xz -C /tmp/CALL    # to read a run again
"""
from __future__ import annotations

import argparse
import hashlib
import io
import shutil
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

ARCHIVE = "runs.tar.xz"
MARKERS = ("results.jsonl", "run.json")
MTIME = 0  # fixed, so the archive's bytes depend on the files only
KEEP_PLAIN_IN_A_RUN = ("README.md",)  # plus top-level *.csv, when the call folder is itself a run


def is_raw(folder: Path) -> bool:
    """Whether ``folder`` directly holds a run's raw files."""
    return any(f.is_file() and (f.name in MARKERS or f.name.startswith("checkpoint") or f.suffix == ".acf")
               for f in folder.iterdir())


def raw_entries(call: Path) -> list[Path]:
    """What goes into the archive: the topmost raw folders below ``call`` (or, for a call folder that is itself a
    run, all but its README and CSVs), and any ``*_runs.tgz`` it came back as."""
    if is_raw(call):
        return sorted(p for p in call.iterdir() if p.name not in (*KEEP_PLAIN_IN_A_RUN, ARCHIVE)
                      and not (p.is_file() and p.suffix == ".csv"))
    found: list[Path] = []

    def walk(folder: Path) -> None:
        for child in sorted(p for p in folder.iterdir() if p.is_dir()):
            if is_raw(child):
                found.append(child)
            else:
                walk(child)

    walk(call)
    return sorted(found + list(call.glob("*_runs.tgz")))


def members(call: Path, entries: list[Path]) -> Iterator[tuple[str, bytes | None]]:
    """(name inside the archive, file bytes or None for a folder), in no particular order."""
    for entry in entries:
        if entry.is_file() and entry.name.endswith("_runs.tgz"):
            yield from _tgz_members(entry)
        elif entry.is_file():
            yield entry.relative_to(call).as_posix(), entry.read_bytes()
        else:
            yield entry.relative_to(call).as_posix(), None
            for path in entry.rglob("*"):
                if path.is_symlink() or not (path.is_file() or path.is_dir()):
                    raise SystemExit(f"{path}: neither a file nor a folder; not archived")
                yield path.relative_to(call).as_posix(), path.read_bytes() if path.is_file() else None


def _tgz_members(tgz: Path) -> Iterator[tuple[str, bytes | None]]:
    prefix = tgz.name[: -len(".tgz")]
    yield prefix, None
    with tarfile.open(tgz, "r:gz") as src:
        for info in src.getmembers():
            name = f"{prefix}/{info.name.removeprefix('./')}".rstrip("/")
            if info.isdir():
                yield name, None
            elif info.isfile():
                handle = src.extractfile(info)
                assert handle is not None
                yield name, handle.read()
            else:
                raise SystemExit(f"{tgz}: {info.name} is neither a file nor a folder; not archived")


def write_archive(path: Path, items: dict[str, bytes | None]) -> None:
    """The deterministic tar.xz of ``items`` (name -> bytes, or None for a folder)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz", preset=9, format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(items):
            data = items[name]
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = MTIME, 0, 0, "root", "root"
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buffer.getvalue())


def read_back(path: Path) -> dict[str, bytes | None]:
    with tarfile.open(path, "r:xz") as tar:
        return {info.name: (None if info.isdir() else tar.extractfile(info).read())  # type: ignore[union-attr]
                for info in tar.getmembers()}


def archive(call: Path, dry_run: bool = False, replace: bool = False, drop_gone: bool = False) -> tuple[int, int]:
    """Pack ``call``'s raw entries (merging any archive already there); returns (files packed, entries removed).
    ``replace``: each raw folder on disk replaces what the archive held under its name (a run done again).
    ``drop_gone``: the archive was unpacked in place first, so a packed path not on disk was moved or deleted since
    (a superseded run moved aside): it leaves the archive, which would otherwise bring it back on the next unpack."""
    entries = raw_entries(call)
    if not entries:
        return 0, 0
    target = call / ARCHIVE
    items = read_back(target) if target.is_file() else {}
    if drop_gone and items:
        kept = {n: d for n, d in items.items() if (call / n).exists()}
        if not any(d is not None for d in kept.values()):
            raise SystemExit(f"{call}: no packed file is on disk; unpack {ARCHIVE} in place first")
        for gone in sorted({n.rsplit("/", 1)[0] for n, d in items.items() if n not in kept and d is not None}):
            print(f"{call}: leaves {ARCHIVE}: {gone}/ (no longer on disk)")
        items = kept
    if replace:
        prefixes = [e.relative_to(call).as_posix() for e in entries if e.is_dir()]
        items = {n: d for n, d in items.items() if not any(n == p or n.startswith(f"{p}/") for p in prefixes)}
    for name, data in members(call, entries):
        if name in items and items[name] != data:
            raise SystemExit(f"{call}: {name} is already in {ARCHIVE} with other contents")
        items[name] = data
    files = sum(data is not None for data in items.values())
    if dry_run:
        print(f"{call}: would pack {files} files from {len(entries)} entries: "
              + ", ".join(e.name for e in entries[:6]) + (" ..." if len(entries) > 6 else ""))
        return files, 0
    write_archive(target, items)
    if _digest(read_back(target)) != _digest(items):
        raise SystemExit(f"{target}: does not read back as written; nothing removed")
    for entry in entries:
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    print(f"{call}: {files} files from {len(entries)} entries -> {ARCHIVE} ({target.stat().st_size:,} bytes)")
    return files, len(entries)


def _digest(items: dict[str, bytes | None]) -> dict[str, str | None]:
    return {k: None if v is None else hashlib.sha256(v).hexdigest() for k, v in items.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("calls", nargs="+", type=Path, help="call folders under benchmarks/results/")
    ap.add_argument("--dry-run", action="store_true", help="say what would be packed; change nothing")
    ap.add_argument("--replace", action="store_true",
                    help="a raw folder whose files changed since it was packed replaces the archive's copy")
    ap.add_argument("--drop-gone", action="store_true",
                    help="(after unpacking in place) packed files no longer on disk, moved or deleted, leave "
                         "the archive")
    args = ap.parse_args()
    for call in args.calls:
        if not call.is_dir():
            ap.error(f"{call}: not a folder")
        archive(call, args.dry_run, args.replace, args.drop_gone)
    return 0


if __name__ == "__main__":
    sys.exit(main())
