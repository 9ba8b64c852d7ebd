"""Send a results folder recorded in parts (``ttq42/``) with a device call light, and bring the call's copy home.

The tree a device call carries must stay under 64 MiB, and a folder's ``runs.tar.xz`` unpacked whole does not fit
beside the bundle. So before a call the archive leaves the folder (to ``--stash``) and only what the call reads is
unpacked; after it the archive comes back, is unpacked in place, and the call's copy of the folder goes over it.
Done by hand, the order mattered: unpacking after the copy brings old runs back over new ones, and a ``cp -a`` keeps
files the device moved or deleted. ``out`` writes the list of files the folder held when the call left; ``home``
deletes every one of them the call's copy no longer holds (moved aside or deleted on the device), then packs again
(``archive_runs.py --replace --drop-gone``).

    python benchmarks/device_tree.py out benchmarks/results/ttq42 --stash /tmp/ttq42.stash \\
        --unpack helion_acfs_030302 parts/pretuned_layer_norm.paretotune
    # the device call: ... tar czf $OUT/ttq42.tgz -C benchmarks/results ttq42
    python benchmarks/device_tree.py home benchmarks/results/ttq42 --stash /tmp/ttq42.stash --copy FILES_AT/ttq42.tgz
    python benchmarks/device_tree.py home benchmarks/results/ttq42 --stash /tmp/ttq42.stash   # no call came back
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


def bring_home(folder: Path, stash: Path, copy: Path | None) -> int:
    """Put the archive back and unpack it in place; with the call's ``copy`` (a ``.tgz`` of the folder), delete the
    files the folder held when it left that the copy lacks and lay the copy over the folder; then pack again."""
    if not (stash / ARCHIVE).is_file():
        fail(f"{stash}: no archive to bring home")
    left_with = set(json.loads((stash / MANIFEST).read_text())["files"])
    with tempfile.TemporaryDirectory() as scratch:
        device = None
        if copy is not None:  # read the copy before anything here changes: a bad one changes nothing
            with tarfile.open(copy, "r:*") as tar:
                tar.extractall(scratch, filter="data")
            device = Path(scratch) / folder.name
            if not device.is_dir():
                fail(f"{copy}: holds no folder {folder.name}/")
        shutil.move(str(stash / ARCHIVE), folder / ARCHIVE)
        with tarfile.open(folder / ARCHIVE, "r:xz") as tar:
            tar.extractall(folder, filter="data")
        if device is not None:
            gone = sorted(left_with - set(files_under(device)))
            for name in gone:
                (folder / name).unlink(missing_ok=True)
            _drop_empty_folders(folder)
            shutil.copytree(device, folder, dirs_exist_ok=True)
            print(f"{folder}: the call's copy laid over it; {len(gone)} files the call moved or deleted removed")
    (stash / MANIFEST).unlink()
    packer = [sys.executable, str(Path(__file__).with_name("archive_runs.py")), "--replace", "--drop-gone"]
    return subprocess.run([*packer, str(folder)], check=False).returncode


def _drop_empty_folders(folder: Path) -> None:
    for path in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(path.iterdir()):
            path.rmdir()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=("out", "home"))
    ap.add_argument("folder", type=Path, help="a results folder with a runs.tar.xz, e.g. benchmarks/results/ttq42")
    ap.add_argument("--stash", type=Path, required=True, help="a folder outside the tree for the archive")
    ap.add_argument("--unpack", nargs="*", default=[], help="(out) archive paths the call reads, unpacked for it")
    ap.add_argument("--copy", type=Path, help="(home) the call's .tgz of the folder")
    args = ap.parse_args()
    if not args.folder.is_dir():
        ap.error(f"{args.folder}: not a folder")
    if args.step == "out":
        return send_out(args.folder, args.stash, args.unpack)
    return bring_home(args.folder, args.stash, args.copy)


if __name__ == "__main__":
    sys.exit(main())
