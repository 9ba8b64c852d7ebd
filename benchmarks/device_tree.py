"""Send a results folder recorded in parts (``ttq42/``) with a device call light, and bring the call's copy home.

The tree a device call carries must stay under 64 MiB, and a folder's ``runs.tar.xz`` unpacked whole does not fit
beside the bundle. So before a call the archive leaves the folder (to ``--stash``) and only what the call reads is
unpacked; after it the archive comes back, is unpacked in place, and the call's copy of the folder goes over it.
Done by hand, the order mattered: unpacking after the copy brings old runs back over new ones, and a ``cp -a`` keeps
files the device moved or deleted. ``out`` writes the list of files the folder held when the call left; ``home``
deletes every one of them the call's copy no longer holds (moved aside or deleted on the device), then packs again
(``archive_runs.py --replace --drop-gone``). A folder the call moved whose runs were still packed (not unpacked
for it) is found in the copy by its name and the files it left with, and its runs follow it.

    python benchmarks/device_tree.py out benchmarks/results/ttq42 --stash /tmp/ttq42.stash \\
        --unpack helion_acfs_030302 parts/pretuned_layer_norm.paretotune
    # the device call: ... tar czf $OUT/ttq42.tgz -C benchmarks/results ttq42
    python benchmarks/device_tree.py home benchmarks/results/ttq42 --stash /tmp/ttq42.stash --copy FILES_AT/ttq42.tgz
    python benchmarks/device_tree.py home benchmarks/results/ttq42 --stash /tmp/ttq42.stash   # no call came back

Between two calls on a warm machine (given back 30 s after a call) there is no time for ``home``, which packs again:
``lay`` lays the call's copy over the folder and leaves the archive in the stash, so the next call carries what
this one wrote; ``home`` with the last call's copy (which holds every earlier call's files) ends the series.

    python benchmarks/device_tree.py lay benchmarks/results/ttq42 --stash /tmp/ttq42.stash --copy FILES_AT/ttq42.tgz
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import NoReturn

ARCHIVE = "runs.tar.xz"
MANIFEST = "manifest.json"


def fail(message: str) -> NoReturn:
    """Bad input: one line naming the file or folder, exit code 2, nothing changed."""
    print(f"device_tree: {message}", file=sys.stderr)
    raise SystemExit(2)


def files_under(folder: Path) -> list[str]:
    """Every file below ``folder``, relative, sorted."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink())


def under(name: str, prefixes: list[str]) -> bool:
    return any(name == p.rstrip("/") or name.startswith(p.rstrip("/") + "/") for p in prefixes)


def send_out(folder: Path, stash: Path, unpack: list[str]) -> int:
    """Move ``folder``'s archive to ``stash``, unpack the members under ``unpack`` into ``folder``, and write the
    list of files the folder then holds. Refuses a stash already in use (an earlier call not brought home)."""
    archive = folder / ARCHIVE
    if (stash / ARCHIVE).exists():
        fail(f"{stash}: holds an archive already; bring the last call home first")
    if not archive.is_file():
        fail(f"{archive}: not found")
    with tarfile.open(archive, "r:xz") as tar:
        chosen = [m for m in tar.getmembers() if under(m.name, unpack)]
        missing = [p for p in unpack if not any(under(m.name, [p]) for m in chosen)]
        if missing:
            fail(f"{archive}: nothing under {', '.join(missing)}")
        stash.mkdir(parents=True, exist_ok=True)
        tar.extractall(folder, members=chosen, filter="data")
    shutil.move(str(archive), stash / ARCHIVE)
    (stash / MANIFEST).write_text(json.dumps({"folder": str(folder.resolve()), "files": files_under(folder)}))
    print(f"{folder}: {ARCHIVE} -> {stash}; unpacked {sum(m.isfile() for m in chosen)} files")
    return 0


def _read_copy(copy: Path, folder: Path, scratch: str) -> Path:
    """Unpack the call's ``.tgz`` into ``scratch``: its copy of ``folder`` (refused when it holds none)."""
    with tarfile.open(copy, "r:*") as tar:
        tar.extractall(scratch, filter="data")
    device = Path(scratch) / folder.name
    if not device.is_dir():
        fail(f"{copy}: holds no folder {folder.name}/")
    return device


def lay_over(folder: Path, stash: Path, copy: Path) -> int:
    """Between two calls: lay the call's copy over ``folder`` while its archive stays in ``stash`` (nothing deleted,
    nothing packed: :func:`bring_home` does both after the last call). Refused for a folder not sent out."""
    if not (stash / ARCHIVE).is_file():
        fail(f"{stash}: no archive: the folder is not out; bring a call home with `home`")
    with tempfile.TemporaryDirectory() as scratch:
        device = _read_copy(copy, folder, scratch)
        shutil.copytree(device, folder, dirs_exist_ok=True)
        print(f"{folder}: the call's copy laid over it ({len(files_under(device))} files); the archive stays in "
              f"{stash} until `home`")
    return 0


def bring_home(folder: Path, stash: Path, copy: Path | None) -> int:
    """Put the archive back and unpack it in place; with the call's ``copy`` (a ``.tgz`` of the folder), delete the
    files the folder held when it left that the copy lacks and lay the copy over the folder; then pack again."""
    if not (stash / ARCHIVE).is_file():
        fail(f"{stash}: no archive to bring home")
    left_with = set(json.loads((stash / MANIFEST).read_text())["files"])
    with tempfile.TemporaryDirectory() as scratch:
        # read the copy before anything here changes: a bad one changes nothing
        device = _read_copy(copy, folder, scratch) if copy is not None else None
        shutil.move(str(stash / ARCHIVE), folder / ARCHIVE)
        with tarfile.open(folder / ARCHIVE, "r:xz") as tar:
            packed = {m.name for m in tar.getmembers() if m.isfile()}
            tar.extractall(folder, filter="data")
        if device is not None:
            for old, new in _follow_moves(folder, device, left_with, packed - left_with):
                print(f"{folder}: {old} moved on the device with its runs still packed; they follow it to {new}")
            gone = sorted(left_with - set(files_under(device)))
            for name in gone:
                (folder / name).unlink(missing_ok=True)
            _drop_empty_folders(folder)
            shutil.copytree(device, folder, dirs_exist_ok=True)
            print(f"{folder}: the call's copy laid over it; {len(gone)} files the call moved or deleted removed")
    (stash / MANIFEST).unlink()
    packer = [sys.executable, str(Path(__file__).with_name("archive_runs.py")), "--replace", "--drop-gone"]
    return subprocess.run([*packer, str(folder)], check=False).returncode


def _follow_moves(folder: Path, device: Path, left_with: set[str], stayed_packed: set[str]) -> list[tuple[str, str]]:
    """Packed files the call never saw (not unpacked for it) whose folder the call moved: the highest folder of
    theirs the copy lacks is looked for in the copy by its name, holding the same files it left with, byte for byte;
    found once, the packed files (unpacked here in place) move with it, else they stay where they were."""
    moves: dict[str, str] = {}
    looked: set[Path] = set()  # each highest missing folder is looked for once, however many files it holds
    for name in sorted(stayed_packed):
        parts = Path(name).parts
        tops = [Path(*parts[:i]) for i in range(1, len(parts)) if not (device / Path(*parts[:i])).exists()]
        if not tops or tops[0] in looked:
            continue
        top = tops[0]
        looked.add(top)
        sent = {f for f in left_with if under(f, [top.as_posix()])}
        if not sent:
            continue
        rel = {Path(f).relative_to(top).as_posix() for f in sent}
        found = [d for d in device.rglob(top.name) if d.is_dir() and all(
            (d / r).is_file() and (d / r).read_bytes() == (folder / top / r).read_bytes() for r in rel)]
        if len(found) == 1:
            moves[top.as_posix()] = found[0].relative_to(device).as_posix()
    for old, new in moves.items():
        for name in (n for n in stayed_packed if n.startswith(old + "/")):
            target = folder / new / Path(name).relative_to(old)
            target.parent.mkdir(parents=True, exist_ok=True)
            (folder / name).rename(target)
    return sorted(moves.items())


def _drop_empty_folders(folder: Path) -> None:
    for path in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(path.iterdir()):
            path.rmdir()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=("out", "lay", "home"))
    ap.add_argument("folder", type=Path, help="a results folder with a runs.tar.xz, e.g. benchmarks/results/ttq42")
    ap.add_argument("--stash", type=Path, required=True, help="a folder outside the tree for the archive")
    ap.add_argument("--unpack", nargs="*", default=[], help="(out) archive paths the call reads, unpacked for it")
    ap.add_argument("--copy", type=Path, help="(lay, home) the call's .tgz of the folder")
    args = ap.parse_args()
    if not args.folder.is_dir():
        ap.error(f"{args.folder}: not a folder")
    if args.step == "out":
        return send_out(args.folder, args.stash, args.unpack)
    if args.step == "lay":
        if args.copy is None:
            ap.error("lay: --copy names the call's .tgz")
        return lay_over(args.folder, args.stash, args.copy)
    return bring_home(args.folder, args.stash, args.copy)


if __name__ == "__main__":
    sys.exit(main())
