"""ptxas discovery, version checks and the build that the static objectives read."""
from __future__ import annotations

import stat
from pathlib import Path

import pytest

from paretotune.errors import ToolchainError
from paretotune.toolchain import ptxas as ptxas_mod
from paretotune.toolchain.ptxas import MIN_VERSION, find_ptxas, parse_ptxas_log, ptxas_version


def _fake_ptxas(path: Path, version: str) -> Path:
    major, minor, _patch = version.split(".")
    path.write_text("#!/bin/sh\necho 'ptxas: NVIDIA (R) Ptx optimizing assembler'\n"
                    f"echo 'Cuda compilation tools, release {major}.{minor}, V{version}'\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in ("PARETOTUNE_PTXAS", "TRITON_PTXAS_PATH"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_the_wheel_ptxas_is_found_and_new_enough(clean_env: pytest.MonkeyPatch) -> None:
    found = find_ptxas()
    assert tuple(int(x) for x in found.version.split(".")[:2]) >= MIN_VERSION
    assert found.path.is_file() and found.major_minor == ".".join(found.version.split(".")[:2])


def test_env_var_wins_over_the_wheel(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = _fake_ptxas(tmp_path / "ptxas", "13.5.1")
    clean_env.setenv("PARETOTUNE_PTXAS", str(fake))
    assert find_ptxas().version == "13.5.1"
    clean_env.delenv("PARETOTUNE_PTXAS")
    clean_env.setenv("TRITON_PTXAS_PATH", str(fake))
    assert find_ptxas().path == fake.resolve()


@pytest.mark.parametrize("version", ["12.8.93", "13.2.51"])
def test_too_old_ptxas_named_by_env_is_an_error(clean_env: pytest.MonkeyPatch, tmp_path: Path, version: str) -> None:
    clean_env.setenv("PARETOTUNE_PTXAS", str(_fake_ptxas(tmp_path / "ptxas", version)))
    with pytest.raises(ToolchainError, match=rf"ptxas {version} is too old.*13\.3"):
        find_ptxas()


def test_missing_ptxas_is_one_clear_error(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("PATH", str(tmp_path))
    clean_env.setattr(ptxas_mod, "_wheel_ptxas", lambda: None)
    with pytest.raises(ToolchainError, match="ptxas >= 13.3 not found") as info:
        find_ptxas()
    assert "\n" not in str(info.value)


def test_old_ptxas_on_path_is_skipped_and_reported(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_ptxas(tmp_path / "ptxas", "12.8.93")
    clean_env.setenv("PATH", str(tmp_path))
    clean_env.setattr(ptxas_mod, "_wheel_ptxas", lambda: None)
    with pytest.raises(ToolchainError, match=r"found only .*12\.8\.93, too old"):
        find_ptxas()


def test_a_non_ptxas_binary_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "ptxas"
    other.write_text("#!/bin/sh\necho hello\n")
    other.chmod(0o755)
    with pytest.raises(ToolchainError, match="not a ptxas binary"):
        ptxas_version(other)


LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'other' for 'sm_90a'
ptxas info    : Function properties for other
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compiling entry function 'softmax_kernel' for 'sm_90a'
ptxas info    : Function properties for softmax_kernel
    48 bytes stack frame, 48 bytes spill stores, 60 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 2048 bytes smem, 400 bytes cmem[0]
"""


def test_log_is_read_for_the_named_kernel() -> None:
    assert parse_ptxas_log(LOG, "softmax_kernel") == (255, 48, 60, 48, 2048)
    assert parse_ptxas_log(LOG, "other") == (40, 4, 4, 8, 1024)


def test_garbage_log_raises() -> None:
    with pytest.raises(ValueError, match="unexpected ptxas -v output"):
        parse_ptxas_log("something else entirely", None)
