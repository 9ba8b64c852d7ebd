"""Every campaign field that names code goes through one confinement rule before anything is imported.

The 2026-12-04 audit (issue 45, defect 1): ``kernel.source`` was confined to the server's import roots and
kernel folders, ``kernel.inputs`` was not, so a POSTed campaign made the checker import a module in the
server's working directory, or any file on its disk by absolute path, before it answered 422. Here a real
``paretotune serve`` runs in a folder holding such a module; each file writes a marker when imported.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from paretotune.campaign.schema import CODE_FIELDS, KernelSpec
from tests.service.conftest import Server, small_campaign

MARKING = "from pathlib import Path\nPath({mark!r}).write_text('imported')\nanything = None\n"


def _plant(folder: Path, name: str) -> Path:
    """``folder/name.py``, which writes ``folder/name.imported`` when imported; returns the marker's path."""
    folder.mkdir(parents=True, exist_ok=True)
    mark = folder / f"{name}.imported"
    (folder / f"{name}.py").write_text(MARKING.format(mark=str(mark)))
    return mark


@pytest.fixture
def server_and_marks(start_server: Callable[..., Server], tmp_path: Path) -> tuple[Server, dict[str, Path]]:
    cwd, elsewhere, kernels = tmp_path / "server-cwd", tmp_path / "elsewhere", tmp_path / "kernels"
    kernels.mkdir()
    marks = {"planted": _plant(cwd, "planted"), "evil": _plant(elsewhere, "evil"),
             "heuristic": _plant(elsewhere, "heuristic")}
    return start_server("--kernel-dir", str(kernels), cwd=cwd), marks


@pytest.mark.parametrize(("kernel", "field", "words"), [
    ({"inputs": "planted:anything"}, "kernel.inputs", "module 'planted' is outside the server's import roots"),
    ({"inputs": "{elsewhere}/evil.py:anything"}, "kernel.inputs", "only from the server's kernel folders"),
    # from the checker's scratch folder, <workdir>/campaigns/.incoming-*/
    ({"inputs": "../../../elsewhere/evil.py:anything"}, "kernel.inputs", "only from the server's kernel folders"),
    ({"heuristic": "{elsewhere}/heuristic.py"}, "kernel.heuristic", "only from the server's kernel folders"),
], ids=["module-in-cwd", "absolute-file", "relative-file", "heuristic-file"])
def test_code_fields_are_confined_before_any_import(server_and_marks: tuple[Server, dict[str, Path]],
                                                    tmp_path: Path, kernel: dict[str, str], field: str,
                                                    words: str) -> None:
    server, marks = server_and_marks
    data = yaml.safe_load(small_campaign())
    data["kernel"].update({k: v.format(elsewhere=tmp_path / "elsewhere") for k, v in kernel.items()})
    r = server.client.post("/campaigns", content=yaml.safe_dump(data), headers={"content-type": "application/yaml"})
    assert [name for name, mark in marks.items() if mark.exists()] == [], r.text
    assert r.status_code == 422, r.text
    assert r.json()["detail"]["field"] == field, r.text
    assert words in r.json()["detail"]["error"], r.text
    assert server.client.get("/campaigns").json() == {"campaigns": []}


def test_the_confined_fields_are_every_field_that_names_code() -> None:
    """A new KernelSpec field must be sorted here: code (confined and trial-imported) or data."""
    data_fields = {"captured", "atol", "rtol", "space", "default"}  # the server refuses captured outright
    assert set(CODE_FIELDS) == {"source", "inputs", "heuristic"}
    assert set(KernelSpec.model_fields) == set(CODE_FIELDS) | data_fields
