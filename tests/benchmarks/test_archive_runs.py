"""benchmarks/archive_runs.py packs a results folder's raw run folders into one ``runs.tar.xz``, the same bytes for
the same files, and leaves what a README cites plain; every file reads back from the archive as it was."""
from __future__ import annotations

import importlib.util
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "archive_runs.py"


@pytest.fixture(scope="module")
def packer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("archive_runs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_call(root: Path, mtime: int) -> Path:
    """A call folder: README, summaries, a pretuned-style kernel folder with a run and its logs, ACFs reached."""
    files = {
        "README.md": "# call\n", "summary.json": "{}\n", "table.csv": "a,b\n1,2\n",
        "pretuned/softmax/acf-only.log": "log\n", "pretuned/softmax/acf-only.yaml": "name: x\n",
        "pretuned/softmax/run-acf-only/results.jsonl": '{"candidate_id": 0}\n',
        "pretuned/softmax/run-acf-only/run.json": "{}\n",
        "pretuned/softmax/run-acf-only/acf/ab.acf": "acf bytes\n",
        "ttq/k/acf_reached/cd.acf": "other acf\n",
        "ttq/k/helion/helion_autotune.csv": "x\n",
    }
    call = root / "call"
    for name, text in files.items():
        path = call / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, (mtime, mtime))
    return call


def plain_files(call: Path) -> list[str]:
    return sorted(p.relative_to(call).as_posix() for p in call.rglob("*") if p.is_file())


def test_raw_folders_go_into_one_archive_and_the_rest_stays_plain(packer: ModuleType, tmp_path: Path) -> None:
    call = make_call(tmp_path, 1_700_000_000)
    packer.archive(call)
    assert plain_files(call) == ["README.md", "pretuned/softmax/acf-only.log", "pretuned/softmax/acf-only.yaml",
                                 "runs.tar.xz", "summary.json", "table.csv", "ttq/k/helion/helion_autotune.csv"]
    with tarfile.open(call / "runs.tar.xz") as tar:
        assert tar.extractfile("pretuned/softmax/run-acf-only/acf/ab.acf").read() == b"acf bytes\n"
        assert tar.extractfile("ttq/k/acf_reached/cd.acf").read() == b"other acf\n"
        infos = tar.getmembers()
    assert [i.name for i in infos] == sorted(i.name for i in infos)
    assert {(i.mtime, i.uid, i.gid, i.uname) for i in infos} == {(packer.MTIME, 0, 0, "root")}


def test_the_same_files_give_the_same_bytes(packer: ModuleType, tmp_path: Path) -> None:
    first = make_call(tmp_path / "one", 1_700_000_000)
    second = make_call(tmp_path / "two", 1_800_000_000)  # other mtimes, other absolute path
    packer.archive(first)
    packer.archive(second)
    assert (first / "runs.tar.xz").read_bytes() == (second / "runs.tar.xz").read_bytes()


def test_a_call_folder_that_is_a_run_keeps_its_readme_and_csv(packer: ModuleType, tmp_path: Path) -> None:
    run = tmp_path / "run1"
    (run / "acf").mkdir(parents=True)
    for name in ("README.md", "validation.csv", "results.jsonl", "run.json", "campaign.yaml", "acf/ab.acf"):
        (run / name).write_text(name)
    packer.archive(run)
    assert plain_files(run) == ["README.md", "runs.tar.xz", "validation.csv"]
    with tarfile.open(run / "runs.tar.xz") as tar:
        assert sorted(tar.getnames()) == ["acf", "acf/ab.acf", "campaign.yaml", "results.jsonl", "run.json"]


def test_an_archive_the_call_came_back_as_is_merged_under_its_stem(packer: ModuleType, tmp_path: Path) -> None:
    call = tmp_path / "call"
    call.mkdir()
    (call / "README.md").write_text("# call\n")
    with tarfile.open(call / "call1_runs.tgz", "w:gz") as tgz:
        data = b'{"kernels": {}}\n'
        info = tarfile.TarInfo("./ttq/ttq.json")
        info.size = len(data)
        tgz.addfile(info, io.BytesIO(data))
    packer.archive(call)
    assert plain_files(call) == ["README.md", "runs.tar.xz"]
    with tarfile.open(call / "runs.tar.xz") as tar:
        assert tar.extractfile("call1_runs/ttq/ttq.json").read() == b'{"kernels": {}}\n'


def test_a_folder_with_nothing_raw_is_left_alone(packer: ModuleType, tmp_path: Path) -> None:
    call = tmp_path / "logs_only"
    call.mkdir()
    (call / "README.md").write_text("# logs\n")
    assert packer.archive(call) == (0, 0)
    assert plain_files(call) == ["README.md"]


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    call = make_call(tmp_path, 1_700_000_000)
    before = plain_files(call)
    out = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", str(call)], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert "would pack 4 files from 2 entries" in out and plain_files(call) == before


def test_a_run_done_again_replaces_its_packed_copy_only_when_asked(packer: ModuleType, tmp_path: Path) -> None:
    """A table recorded over sessions: a run folder is unpacked, done again, packed again. Its new files differ
    from the archive's: refused by default (two different runs under one name), replaced with ``replace``, and
    the other folders' packed files stay."""
    import tarfile

    call = make_call(tmp_path, 1_700_000_000)
    packer.archive(call)
    with tarfile.open(call / "runs.tar.xz") as tar:
        tar.extractall(call, filter="data")
    again = call / "pretuned" / "softmax" / "run-acf-only"
    (again / "acf" / "ab.acf").unlink()
    (again / "results.jsonl").write_text('{"candidate_id": 0}\n{"candidate_id": 1}\n')
    with pytest.raises(SystemExit, match="already in runs.tar.xz with other contents"):
        packer.archive(call)
    packer.archive(call, replace=True)
    with tarfile.open(call / "runs.tar.xz") as tar:
        names = tar.getnames()
        assert tar.extractfile("pretuned/softmax/run-acf-only/results.jsonl").read().count(b"candidate_id") == 2
    assert "pretuned/softmax/run-acf-only/acf/ab.acf" not in names  # the old run's file went with it
    assert "ttq/k/acf_reached/cd.acf" in names


def test_a_run_moved_aside_after_packing_leaves_the_archive_only_when_asked(packer: ModuleType, tmp_path: Path) -> None:
    """A superseded run moved aside after it was packed: by default the archive keeps it under its old path, and the
    next unpack in place brings it back there (where a table recorded in parts takes it for a run of the current
    plan); with ``drop_gone`` it leaves the archive, and the moved copy is packed where it now is. Without the
    archive unpacked first, ``drop_gone`` refuses rather than drop everything."""
    call = make_call(tmp_path, 1_700_000_000)
    packer.archive(call)
    with pytest.raises(SystemExit, match="unpack runs.tar.xz in place first"):
        (call / "new" / "run").mkdir(parents=True)
        (call / "new" / "run" / "run.json").write_text("{}\n")
        packer.archive(call, drop_gone=True)
    with tarfile.open(call / "runs.tar.xz") as tar:
        tar.extractall(call, filter="data")
    old = call / "pretuned" / "softmax" / "run-acf-only"
    (call / "superseded").mkdir()
    old.rename(call / "superseded" / "run-acf-only")
    packer.archive(call)
    with tarfile.open(call / "runs.tar.xz") as tar:
        assert "pretuned/softmax/run-acf-only/run.json" in tar.getnames()  # kept: it would come back
        tar.extractall(call, filter="data")
    old.joinpath("run.json").unlink()
    for path in sorted(old.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    old.rmdir()
    packer.archive(call, drop_gone=True)
    with tarfile.open(call / "runs.tar.xz") as tar:
        names = tar.getnames()
    assert not any(n.startswith("pretuned/softmax/run-acf-only") for n in names)
    assert "superseded/run-acf-only/run.json" in names and "new/run/run.json" in names
    assert "ttq/k/acf_reached/cd.acf" in names
