"""Bad input to ``capture`` and to a campaign's ``kernel.captured``: one line naming the field or file, exit 2,
nothing made."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from paretotune.cli import main
from paretotune.errors import UserError

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.mark.parametrize(("program", "message"), [
    ([], "no program given"),
    (["--", "bash", "run.sh"], "'bash' is not a Python program"),
    (["--", "python", "-c", "print(1)"], "`python -c CODE` is not supported"),
    (["--", "python", "-u"], "no script or module after the Python interpreter"),
    (["--", "python3", "missing.py"], "no such program file: missing.py"),
])
def test_a_program_it_cannot_run_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              program: list[str], message: str) -> None:
    out = tmp_path / "cap"
    assert main(["capture", "--out", str(out), *program]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert not out.exists()


def test_bad_options_and_an_existing_capture_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "p.py"
    script.write_text("print('ran')\n")
    assert main(["capture", "--out", str(tmp_path / "a"), "--shapes", "0", "--", "python", str(script)]) == 2
    assert "--shapes: 0 is less than 1" in capsys.readouterr().err and not (tmp_path / "a").exists()
    held = tmp_path / "held"
    held.mkdir()
    (held / "capture.json").write_text("{}")
    assert main(["capture", "--out", str(held), "--", "python", str(script)]) == 2
    err = capsys.readouterr()
    assert "already holds a capture" in err.err and "ran" not in err.out  # the program never started


def _campaign(tmp_path: Path, kernel: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(f"kernel: {kernel}\nshapes: [{{captured: abc}}]\nobjectives: [registers]\n"
                    "search: {engine: random, generations: 1, pool_size: 6}\n")
    return path


def test_captured_and_inputs_together_is_a_schema_error(tmp_path: Path) -> None:
    from paretotune.campaign.load import load_campaign

    path = _campaign(tmp_path, "{source: m:k, inputs: m:f, captured: calls/k.json}")
    with pytest.raises(UserError, match=r"c.yaml: kernel: give either inputs or captured, not both"):
        load_campaign(path)


def test_a_missing_or_foreign_calls_file_names_kernel_captured(tmp_path: Path) -> None:
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter

    source = f"{EXAMPLES / 'vector_add.py'}:add_kernel"
    missing = load_campaign(_campaign(tmp_path, f"{{source: '{source}', captured: calls/none.json}}"))
    with pytest.raises(UserError, match=r"kernel\.captured: no such file: .*none\.json"):
        make_adapter(missing)
    (tmp_path / "calls").mkdir()
    (tmp_path / "calls" / "other.json").write_text(json.dumps({
        "format": "paretotune-capture/1", "kernel": {"name": "softmax_kernel", "kind": "triton"},
        "signatures": [{"id": "abc", "args": {}, "config": {}, "launches": []}]}))
    foreign = load_campaign(_campaign(tmp_path, f"{{source: '{source}', captured: calls/other.json}}"))
    with pytest.raises(UserError, match="records kernel 'softmax_kernel', but kernel.source names 'add_kernel'"):
        make_adapter(foreign)
    (tmp_path / "calls" / "junk.json").write_text("[1, 2]")
    junk = load_campaign(_campaign(tmp_path, f"{{source: '{source}', captured: calls/junk.json}}"))
    with pytest.raises(UserError, match=r"kernel\.captured: .*junk\.json is not a capture's calls file"):
        make_adapter(junk)


def test_the_server_refuses_a_captured_campaign(tmp_path: Path) -> None:
    """kernel.captured names a file on the server's disk, like acf.files: refused before anything reads it."""
    from paretotune.service.campaign_check import Invalid, check_server_rules
    from paretotune.service.config import ServiceConfig

    data = {"kernel": {"source": "m:k", "captured": "/etc/passwd"}, "shapes": [{"captured": "x"}]}
    with pytest.raises(Invalid, match="kernel.captured: not accepted by the server") as caught:
        check_server_rules(data, ServiceConfig(workdir=tmp_path))
    assert caught.value.field == "kernel.captured"


def test_a_program_that_fails_keeps_its_exit_code_and_its_record(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The program's uncaught exception is its own (exit code 1, its traceback); the capture is still saved."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # a capture on a CPU (the program has no kernel)
    script = tmp_path / "p.py"
    script.write_text("import sys\nprint('working', sys.argv[1:])\nraise RuntimeError('boom')\n")
    assert main(["capture", "--out", str(tmp_path / "cap"), "--", "python", str(script), "a", "b"]) == 1
    doc = json.loads((tmp_path / "cap" / "capture.json").read_text())
    assert doc["program"]["exit_code"] == 1 and doc["program"]["argv"] == [str(script), "a", "b"]
    assert doc["kernels"] == [] and (tmp_path / "cap" / "summary.txt").is_file()
