"""benchmarks/device_tree.py sends a results folder with a device call without its archive, only the runs the call
reads unpacked, and brings the call's copy home: the archive back, what the call changed laid over it, what the
call moved or deleted gone, everything packed again. Run as the command it is, on real tar files."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def run(script: str, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCHMARKS / script), *map(str, args)], capture_output=True,
                          text=True, check=False)


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def recorded_folder(root: Path) -> Path:
    """A table recorded in parts: plain summaries, two kernels' runs and an ACF list, the raw ones packed."""
    folder = root / "ttq"
    write(folder, {"ttq.json": "{}\n", "parts/a.paretotune/ttq.json": "a\n",
                   "parts/a.paretotune/run/results.jsonl": "a-old\n", "parts/a.paretotune/run/acf/x.acf": "x\n",
                   "parts/b.paretotune/ttq.json": "b\n", "parts/b.paretotune/run/results.jsonl": "b\n",
                   "acfs/p.acf": "p\n"})
    assert run("archive_runs.py", folder).returncode == 0
    return folder


def packed(folder: Path) -> dict[str, bytes]:
    with tarfile.open(folder / "runs.tar.xz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def on_disk(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_a_call_goes_out_light_and_comes_home_with_its_moves(tmp_path: Path) -> None:
    folder, stash = recorded_folder(tmp_path), tmp_path / "stash"
    sent = run("device_tree.py", "out", folder, "--stash", stash, "--unpack", "acfs", "parts/a.paretotune")
    assert sent.returncode == 0, sent.stderr
    assert not (folder / "runs.tar.xz").exists() and (stash / "runs.tar.xz").is_file()
    assert {"acfs/p.acf", "parts/a.paretotune/run/results.jsonl"} <= on_disk(folder)
    assert "parts/b.paretotune/run/results.jsonl" not in on_disk(folder)

    device = tmp_path / "device" / "ttq"  # the call: runs a kernel again, moves a's arm aside, adds a table row
    shutil.copytree(folder, device)
    (device / "superseded").mkdir()
    (device / "parts/a.paretotune").rename(device / "superseded/a.paretotune")
    write(device, {"parts/c.paretotune/run/results.jsonl": "c\n", "ttq.json": "{\"rows\": 3}\n"})
    with tarfile.open(tmp_path / "ttq.tgz", "w:gz") as tar:
        tar.add(device, arcname="ttq")

    home = run("device_tree.py", "home", folder, "--stash", stash, "--copy", tmp_path / "ttq.tgz")
    assert home.returncode == 0, home.stderr
    archive = packed(folder)
    assert archive["parts/c.paretotune/run/results.jsonl"] == b"c\n"  # the call's new run
    assert archive["parts/b.paretotune/run/results.jsonl"] == b"b\n"  # never unpacked: kept as it was
    assert archive["superseded/a.paretotune/run/results.jsonl"] == b"a-old\n"  # moved on the device ...
    assert not any(name.startswith("parts/a.paretotune") for name in archive)  # ... and not back at its old path
    assert not (folder / "parts/a.paretotune").exists()
    assert (folder / "ttq.json").read_text() == "{\"rows\": 3}\n"
    assert not (stash / "runs.tar.xz").exists()


def test_a_path_the_archive_lacks_is_refused_and_nothing_moves(tmp_path: Path) -> None:
    folder, stash = recorded_folder(tmp_path), tmp_path / "stash"
    before = on_disk(folder)
    sent = run("device_tree.py", "out", folder, "--stash", stash, "--unpack", "parts/nope")
    assert sent.returncode == 2
    assert sent.stderr.strip().count("\n") == 0 and "parts/nope" in sent.stderr
    assert on_disk(folder) == before and not (stash / "runs.tar.xz").exists()


def test_with_no_call_to_bring_home_the_folder_is_as_it_was(tmp_path: Path) -> None:
    folder, stash = recorded_folder(tmp_path), tmp_path / "stash"
    files, archive = on_disk(folder), (folder / "runs.tar.xz").read_bytes()
    assert run("device_tree.py", "out", folder, "--stash", stash, "--unpack", "acfs").returncode == 0
    assert run("device_tree.py", "home", folder, "--stash", stash).returncode == 0
    assert on_disk(folder) == files and (folder / "runs.tar.xz").read_bytes() == archive


def test_calls_on_a_warm_machine_are_laid_over_and_the_last_brings_all_home(tmp_path: Path) -> None:
    """Two calls in a row: the first's copy is laid over the folder (the archive stays out), the second carries
    what the first wrote and moves a part aside whose runs were never unpacked for it; ``home`` with the second's
    copy keeps both calls' files, and the moved part's packed runs follow it (found by its name and the files it
    left with) rather than staying at the old path. ``lay`` on a folder not sent out is refused."""
    folder, stash = recorded_folder(tmp_path), tmp_path / "stash"
    refused = run("device_tree.py", "lay", folder, "--stash", stash, "--copy", tmp_path / "none.tgz")
    assert refused.returncode == 2 and "not out" in refused.stderr
    assert run("device_tree.py", "out", folder, "--stash", stash, "--unpack", "acfs").returncode == 0

    def call(name: str, change) -> Path:  # the device's copy of the folder as the call left it, as a .tgz
        device = tmp_path / name / "ttq"
        shutil.copytree(folder, device)
        change(device)
        with tarfile.open(tmp_path / f"{name}.tgz", "w:gz") as tar:
            tar.add(device, arcname="ttq")
        return tmp_path / f"{name}.tgz"

    first = call("first", lambda d: write(d, {"parts/c.paretotune/run/results.jsonl": "c\n", "c.log": "1\n"}))
    laid = run("device_tree.py", "lay", folder, "--stash", stash, "--copy", first)
    assert laid.returncode == 0, laid.stderr
    assert (folder / "parts/c.paretotune/run/results.jsonl").read_text() == "c\n"
    assert (stash / "runs.tar.xz").is_file() and not (folder / "runs.tar.xz").exists()

    def second_call(d: Path) -> None:
        (d / "superseded").mkdir()
        (d / "parts/b.paretotune").rename(d / "superseded/b.paretotune")
        write(d, {"d.log": "2\n"})

    second = call("second", second_call)
    home = run("device_tree.py", "home", folder, "--stash", stash, "--copy", second)
    assert home.returncode == 0, home.stderr
    assert "parts/b.paretotune moved on the device with its runs still packed" in home.stdout
    archive = packed(folder)
    assert archive["parts/c.paretotune/run/results.jsonl"] == b"c\n"  # the first call's, carried by the second
    assert archive["superseded/b.paretotune/run/results.jsonl"] == b"b\n"
    assert not any(name.startswith("parts/b.paretotune") for name in archive)
    assert (folder / "c.log").read_text() == "1\n" and (folder / "d.log").read_text() == "2\n"
