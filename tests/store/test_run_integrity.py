"""The integrity rule of a run directory (paretotune/front/integrity.py; issue 45, defect 4), through the real
CLI in subprocesses on a real CPU run, the four damages the audit reproduced:

(a) a stored objective value edited to a plausible number: the front showed the edit while the same record's
    measurement (``extra.<shape>``) still held the original;
(b) deleted ``acf/`` files: the front listed those ACFs without a word;
(c) a blank line in ``results.jsonl``: accepted by every command;
(d) an edited ``campaign.yaml`` (objectives changed): ``front`` and ``export`` accepted it, ``resume`` refused it.

Errors: exit code 2 and the same one line from every command; warnings: exit code 0 and the same one warning
line. tests/store/test_damaged_runs.py runs more cases of the rule through every command in process.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from paretotune.errors import UserError
from reliability.conftest import cli, cli_env
from store.test_damaged_runs import CAMPAIGN, META, RESULTS, _edit_acf, _lines, _named_acf, tree_digest


def _edit_a_value(run: Path) -> None:
    """(a): the first ACF candidate's registers, 8 fewer (its extra.wide.registers untouched)."""
    lines = _lines(run)
    i = next(i for i, line in enumerate(lines) if json.loads(line)["acf"] and json.loads(line)["status"] == "ok")
    row = json.loads(lines[i])
    row["registers"] -= 8
    lines[i] = json.dumps(row, sort_keys=True) + "\n"
    (run / RESULTS).write_text("".join(lines))


def _delete_acfs(run: Path) -> None:
    """(b): every ACF file of the run (the .acf, not its .json record)."""
    for path in (run / "acf").glob("*.acf"):
        path.unlink()


def _blank_line(run: Path) -> None:
    """(c): an empty line between records 2 and 3."""
    lines = _lines(run)
    (run / RESULTS).write_text("".join(lines[:2] + ["\n"] + lines[2:]))


def _objectives_changed(run: Path) -> None:
    """(d): one objective fewer in the run's campaign copy."""
    text = (run / CAMPAIGN).read_text()
    assert "  - spill_bytes            # min\n" in text
    (run / CAMPAIGN).write_text(text.replace("  - spill_bytes            # min\n", ""))


ERRORS: dict[str, tuple[Callable[[Path], None], str]] = {
    "a_value_edited": (_edit_a_value, "but the record's own measurement (extra.wide) gives"),
    "c_blank_line": (_blank_line, f"{RESULTS}:3: blank line"),
    "d_objectives_changed": (_objectives_changed, "campaign.yaml: differs from the campaign this run was made with"),
}
COMMANDS = {"front": ["front"], "export": ["export", "--out", "-"]}


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli(*argv), env=cli_env(), capture_output=True, text=True, timeout=180, check=False)


@pytest.fixture
def copy(small_real_run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(small_real_run, tmp_path / "run"))


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_damage_is_one_error_line_from_front_and_export(copy: Path, case: str) -> None:
    damage, expected = ERRORS[case]
    damage(copy)
    before = tree_digest(copy)
    answers = []
    for command in ("front", "export"):
        proc = _cli(COMMANDS[command][0], str(copy), *COMMANDS[command][1:])
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, (command, proc.stderr)
        assert len(lines) == 1 and lines[0].startswith("paretotune: error: "), (command, proc.stderr)
        assert expected in lines[0], (command, lines[0])
        assert proc.stdout == "", (command, proc.stdout[:500])  # no front, no table
        answers.append(lines[0])
    assert answers[0] == answers[1], "two commands answered the same damage differently"
    assert tree_digest(copy) == before


def test_deleted_acf_files_are_one_warning_from_front_and_export(copy: Path) -> None:
    """(b): the numbers stand as measured, so the run is read, with one warning naming the missing files."""
    named = {json.loads(line)["acf"] for line in _lines(copy)} - {""}
    _delete_acfs(copy)
    warnings = []
    for command in ("front", "export"):
        proc = _cli(COMMANDS[command][0], str(copy), *COMMANDS[command][1:])
        assert proc.returncode == 0, (command, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("paretotune: warning: "), (command, proc.stderr)
        assert f"{copy / 'acf'}: {len(named)} ACF files the records name are missing" in lines[0], lines[0]
        assert "cannot be rebuilt from this folder" in lines[0]
        warnings.append(lines[0])
    assert warnings[0] == warnings[1]


def test_an_edited_acf_file_is_an_error_from_front_and_export(copy: Path) -> None:
    """An ACF whose content no longer hashes to its name: a rebuild would apply other controls."""
    path = _named_acf(copy)
    _edit_acf(copy)
    for command in ("front", "export"):
        proc = _cli(COMMANDS[command][0], str(copy), *COMMANDS[command][1:])
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, (command, proc.stderr)
        assert f"{path}: the ACF's content does not match its name" in proc.stderr, proc.stderr


def _without_hash(run: Path) -> None:
    meta = json.loads((run / META).read_text())
    del meta["campaign_sha256"]
    (run / META).write_text(json.dumps(meta))


def test_a_run_made_before_the_hash_is_read_with_a_warning(copy: Path) -> None:
    """An older run folder (no campaign_sha256 in run.json) stays readable: one warning, the front as before."""
    intact = _cli("front", "--json", str(copy))
    _without_hash(copy)
    for command in ("front", "export"):
        proc = _cli(COMMANDS[command][0], str(copy), *COMMANDS[command][1:])
        assert proc.returncode == 0, (command, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"paretotune: warning: {copy / META}: no campaign_sha256"), \
            proc.stderr
    again = _cli("front", "--json", str(copy))
    assert json.loads(again.stdout)["front"] == json.loads(intact.stdout)["front"]


def test_a_run_made_before_the_hash_with_other_objectives_in_its_copy_is_refused(copy: Path) -> None:
    """(d) on an older run: without the hash, the copy is checked against run.json's objective columns."""
    _without_hash(copy)
    _objectives_changed(copy)
    for command in ("front", "export"):
        proc = _cli(COMMANDS[command][0], str(copy), *COMMANDS[command][1:])
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, (command, proc.stderr)
        assert lines[0].startswith("paretotune: warning: ") and len(lines) == 2, proc.stderr
        assert (f"{copy / CAMPAIGN}: its objectives and shapes give the columns ['registers', "
                "'theoretical_occupancy'], but the run stored ['spill_bytes', 'registers'") in lines[1], lines[1]


def test_resume_gives_the_same_line_as_front(copy: Path) -> None:
    """(d) was refused by resume only, in its own words; now resume, front and export say one thing."""
    _objectives_changed(copy)
    before = tree_digest(copy)
    front = _cli("front", str(copy))
    resume = _cli("resume", str(copy), "--quiet")
    assert front.returncode == resume.returncode == 2
    assert front.stderr == resume.stderr and "differs from the campaign this run was made with" in front.stderr
    assert tree_digest(copy) == before


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_the_service_reader_reports_the_same_damage(copy: Path, case: str) -> None:
    """The service's views (progress, points, front) read through the same rule: the run shows as damaged,
    with the rule's line (server paths hidden), and its front is refused."""
    from paretotune.service.progress import RunView

    damage, expected = ERRORS[case]
    damage(copy)
    view = RunView()
    progress, points = view.progress(copy, 10), view.points(copy)
    assert expected.replace(str(copy), "<run>") in progress["damaged"], progress
    assert points["damaged"] == progress["damaged"] and points["points"] == []
    with pytest.raises(UserError, match="was (the file|it) edited"):
        view.front(copy)
