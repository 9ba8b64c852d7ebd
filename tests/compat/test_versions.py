"""A Helion or Triton outside the tested releases is refused in one line that says what to install."""
from __future__ import annotations

import pytest

from paretotune.compat import helion as compat_helion
from paretotune.compat import release
from paretotune.compat import triton as compat_triton
from paretotune.errors import UserError


def test_the_installed_releases_pass() -> None:
    compat_helion.check()
    compat_triton.check()


@pytest.mark.parametrize(("module", "name", "found", "wanted"), [
    (compat_helion, "helion", "1.6.0", "helion>=1.5.0,<1.6"),
    (compat_helion, "helion", "1.4.9", "helion>=1.5.0,<1.6"),
    (compat_triton, "triton", "3.10.0", "triton>=3.6,<3.10"),
    (compat_triton, "triton", "3.5.1+git8f2e", "triton>=3.6,<3.10"),
])
def test_an_untested_release_is_one_line_naming_the_range(monkeypatch: pytest.MonkeyPatch, module: object,
                                                          name: str, found: str, wanted: str) -> None:
    monkeypatch.setattr(module, "installed", lambda *names: found)
    with pytest.raises(UserError) as info:
        module.check()  # type: ignore[attr-defined]
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{name} {found} is not a release paretotune was tested with")
    assert f"pip install '{wanted}'" in message


def test_a_missing_library_is_left_to_its_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compat_triton, "installed", lambda *names: None)
    compat_triton.check()


def test_release_numbers_ignore_local_and_pre_release_tags() -> None:
    assert release.parse("3.6.0+git1234") == (3, 6, 0)
    assert release.parse("1.5.1rc2") == (1, 5, 1)
    assert (3, 9, 0) < (3, 10) and release.parse("3.10") >= (3, 10)
    with pytest.raises(ValueError):
        release.parse("dev")
