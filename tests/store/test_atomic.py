"""atomic_write: the fsync order its docstring promises, no temp file left behind, and a writer killed at
random moments never leaves a torn file."""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paretotune.store import atomic
from paretotune.store.atomic import atomic_write, atomic_write_json


def test_text_bytes_json_and_no_leftovers(tmp_path: Path) -> None:
    atomic_write(tmp_path / "a.txt", "héllo")
    atomic_write(tmp_path / "b.bin", b"\x00\x01")
    atomic_write_json(tmp_path / "c.json", {"b": 1, "a": [1.5]}, sort_keys=True)
    atomic_write(tmp_path / "a.txt", "replaced")
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "replaced"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "c.json").read_text() == '{"a": [1.5], "b": 1}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.bin", "c.json"]


def test_mode_is_set_before_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        seen.append(stat.S_IMODE(os.stat(src).st_mode))
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace)
    atomic_write(tmp_path / "tool", "#!/bin/sh\n", mode=0o755)
    assert seen == [0o755] and stat.S_IMODE((tmp_path / "tool").stat().st_mode) == 0o755


def test_file_fsync_then_rename_then_folder_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync file")
        real_fsync(fd)

    def replace(src: str, dst: str) -> None:
        events.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    monkeypatch.setattr(atomic.os, "replace", replace)
    atomic_write(tmp_path / "x", "data")
    assert events == ["fsync file", "replace", "fsync dir"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temp(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    atomic_write(tmp_path / "x", "old")

    def replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", replace)
    with pytest.raises(OSError, match="No space"):
        atomic_write(tmp_path / "x", "new")
    assert (tmp_path / "x").read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x"]


WRITER = """
import sys
from paretotune.store.atomic import atomic_write
path, i = sys.argv[1], 0
while True:
    i += 1
    atomic_write(path, (str(i % 10) * 200_000) + "END")
"""


def _whole(text: str) -> bool:
    return len(text) == 200_003 and text.endswith("END") and len(set(text[:-3])) == 1


def test_readers_and_a_killed_writer_never_see_a_torn_file(tmp_path: Path) -> None:
    target = tmp_path / "state"
    atomic_write(target, "0" * 200_000 + "END")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for delay in (0.05, 0.13, 0.21):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], env=env)
        reads, end = 0, time.monotonic() + 0.4 + delay  # the interpreter starts in ~0.3 s, then rewrites in a loop
        while time.monotonic() < end:
            assert _whole(target.read_text())
            reads += 1
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert reads > 10 and _whole(target.read_text())
    assert {p.name for p in tmp_path.iterdir() if not p.name.endswith(".tmp")} == {"state"}
