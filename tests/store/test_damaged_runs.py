"""A damaged run directory is refused by every command that reads one: exit code 2, one line on stderr naming
the file, no traceback, and the directory left exactly as it was (hashed before and after). Every command
reads through one reader (paretotune.front.open_run), so the answer is the same for all of them; a torn last
line is refused until ``resume`` repairs it.

One real CPU run (quickstart softmax, CompileIQ ACFs, real ptxas; one generation of 9) is made once per module;
each case copies it, damages one thing and runs a command in-process through the CLI's ``main()`` (a few
cases run the CLI in a subprocess, to check the exit path as a user sees it).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from paretotune.cli import main
from reliability.conftest import cli, cli_env

RESULTS, META, CAMPAIGN = "results.jsonl", "run.json", "campaign.yaml"


@pytest.fixture
def base_run(small_real_run: Path) -> Path:
    return small_real_run


def tree_digest(root: Path) -> str:
    """Names, kinds and contents of everything under ``root`` (FIFOs and other specials by kind only; the
    content of ``.lock``, the pid of the last process that held the run, is left out)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                h.update(f"L {rel} {os.readlink(p)}\n".encode())
            elif p.is_dir():
                h.update(f"D {rel}\n".encode())
            elif p.is_file() and rel == ".lock":  # the lock holder's pid: a command that locks the run writes it
                h.update(b"F .lock\n")
            elif p.is_file():
                h.update(f"F {rel} ".encode() + p.read_bytes() + b"\n")
            else:
                h.update(f"S {rel}\n".encode())
    return h.hexdigest()


def _lines(run: Path) -> list[str]:
    return (run / RESULTS).read_text().splitlines(keepends=True)


def _edit_row(index: int, **changes: object) -> Callable[[Path], None]:
    """Change fields of results line ``index`` (a missing value deletes the field)."""
    def damage(run: Path) -> None:
        lines = _lines(run)
        row = json.loads(lines[index])
        for key, value in changes.items():
            if value is _DELETE:
                row.pop(key, None)
            else:
                row[key] = value
        lines[index] = json.dumps(row) + "\n"
        (run / RESULTS).write_text("".join(lines))
    return damage


_DELETE = object()


def _replace_line(index: int, text: str) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        lines = _lines(run)
        lines[index] = text + "\n"
        (run / RESULTS).write_text("".join(lines))
    return damage


def _duplicate(index: int) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        lines = _lines(run)
        (run / RESULTS).write_text("".join(lines + [lines[index]]))
    return damage


def _replace_file(name: str, data: bytes | None = None, *, kind: str = "file") -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        path = run / name
        path.unlink()
        if kind == "dir":
            path.mkdir()
            (path / "x").write_text("x")
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "symlink-dev-zero":
            path.symlink_to("/dev/zero")
        elif kind == "file":
            assert data is not None
            path.write_bytes(data)
    return damage


def _edit(part: Callable[[dict[str, Any]], dict[str, Any]], changes: dict[str, object]) -> Callable[[Path], None]:
    """A damage that sets (or, with _DELETE, removes) keys of one part of run.json."""
    def damage(run: Path) -> None:
        meta = json.loads((run / META).read_text())
        target = part(meta)
        for key, value in changes.items():
            if value is _DELETE:
                target.pop(key, None)
            else:
                target[key] = value
        (run / META).write_text(json.dumps(meta))
    return damage


def _edit_meta(**changes: object) -> Callable[[Path], None]:
    return _edit(lambda meta: meta, changes)


def _edit_column(index: int, **changes: object) -> Callable[[Path], None]:
    return _edit(lambda meta: meta["objective_columns"][index], changes)


def _torn_and_duplicated(run: Path) -> None:
    lines = _lines(run)
    (run / RESULTS).write_text("".join(lines + [lines[3], lines[4][:40]]))


def _cut_bytes(n: int) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        data = (run / RESULTS).read_bytes()
        (run / RESULTS).write_bytes(data[:-n])
    return damage


def _append(data: bytes) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        with open(run / RESULTS, "ab") as fh:
            fh.write(data)
    return damage


def _raw_value(index: int, column: str, literal: str) -> Callable[[Path], None]:
    """Set one objective value of results line ``index`` to a JSON literal Python's json reads (NaN, Infinity)."""
    def damage(run: Path) -> None:
        lines = _lines(run)
        row = json.loads(lines[index])
        row[column] = 0.125
        lines[index] = json.dumps(row).replace(": 0.125", f": {literal}") + "\n"
        (run / RESULTS).write_text("".join(lines))
    return damage


def _ok_acf_line(run: Path, nth: int) -> int:
    """The index of the ``nth`` results line of a measured (status ok) ACF candidate; index 0 is the baseline."""
    if nth < 0:
        return 0
    rows = [json.loads(line) for line in _lines(run)]
    return [i for i, row in enumerate(rows) if row["status"] == "ok" and row["acf"]][nth]


def _shift_value(nth: int, column: str, by: float) -> Callable[[Path], None]:
    """A stored objective value edited to a plausible number (the record's measurement in extra kept);
    ``nth`` ok ACF candidate, -1 the baseline."""
    def damage(run: Path) -> None:
        lines = _lines(run)
        index = _ok_acf_line(run, nth)
        row = json.loads(lines[index])
        row[column] = row[column] + by
        lines[index] = json.dumps(row, sort_keys=True) + "\n"
        (run / RESULTS).write_text("".join(lines))
    return damage


def _edit_extra(nth: int, **changes: object) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        lines = _lines(run)
        index = _ok_acf_line(run, nth)
        row = json.loads(lines[index])
        row["extra"] = json.dumps({**json.loads(row["extra"]), **changes})
        lines[index] = json.dumps(row, sort_keys=True) + "\n"
        (run / RESULTS).write_text("".join(lines))
    return damage


def _insert_line(index: int, text: str) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        lines = _lines(run)
        lines.insert(index, text)
        (run / RESULTS).write_text("".join(lines))
    return damage


def _named_acf(run: Path) -> Path:
    """The ACF file the first ACF candidate's record names."""
    sha = next(json.loads(line)["acf"] for line in _lines(run) if json.loads(line)["acf"])
    return run / "acf" / f"{sha}.acf"


def _edit_acf(run: Path) -> None:
    path = _named_acf(run)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit: another control, the same size
    path.write_bytes(bytes(data))


def _acf_a_fifo(run: Path) -> None:
    path = _named_acf(run)
    path.unlink()
    os.mkfifo(path)


def _campaign_edit(old: str, new: str) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        text = (run / CAMPAIGN).read_text()
        assert old in text
        (run / CAMPAIGN).write_text(text.replace(old, new))
    return damage


# case -> (damage, what the error line must contain)
DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "results_not_utf8": (lambda r: (r / RESULTS).write_bytes((r / RESULTS).read_bytes()[:100] + b"\xff\xfe"
                                                             + (r / RESULTS).read_bytes()[100:]), "not UTF-8"),
    "results_a_directory": (_replace_file(RESULTS, kind="dir"), "not a regular file"),
    "results_a_fifo": (_replace_file(RESULTS, kind="fifo"), "not a regular file"),
    "results_links_to_dev_zero": (_replace_file(RESULTS, kind="symlink-dev-zero"), "not a regular file"),
    "line_a_json_array": (_replace_line(2, "[1, 2, 3]"), "not a JSON object"),
    "line_a_json_number": (_replace_line(2, "42"), "not a JSON object"),
    "line_a_json_string": (_replace_line(2, '"hello"'), "not a JSON object"),
    "line_null": (_replace_line(2, "null"), "not a JSON object"),
    "line_corrupt_in_the_middle": (_replace_line(2, '{"candidate_id": 2, "gen'), "corrupt results line"),
    "line_nested_100k_deep": (_replace_line(2, "[" * 100_000 + "]" * 100_000), "corrupt results line"),
    "last_line_an_array": (_replace_line(-1, "[0]"), "not a JSON object"),
    "candidate_id_a_string": (_edit_row(3, candidate_id="3"), "'candidate_id' must be an integer"),
    "candidate_id_a_float": (_edit_row(3, candidate_id=3.5), "'candidate_id' must be an integer"),
    "candidate_id_a_bool": (_edit_row(3, candidate_id=True), "'candidate_id' must be an integer"),
    "candidate_id_negative": (_edit_row(3, candidate_id=-3), "'candidate_id' must not be negative"),
    "candidate_id_missing": (_edit_row(3, candidate_id=_DELETE), "missing field 'candidate_id'"),
    "generation_a_string": (_edit_row(3, generation="one"), "'generation' must be an integer"),
    "generation_null": (_edit_row(3, generation=None), "'generation' must be an integer"),
    "is_baseline_a_string": (_edit_row(0, is_baseline="yes"), "'is_baseline' must be true or false"),
    "is_baseline_a_number": (_edit_row(0, is_baseline=1), "'is_baseline' must be true or false"),
    "status_unknown": (_edit_row(4, status="great"), "'status' must be 'ok' or 'failed'"),
    "status_missing": (_edit_row(4, status=_DELETE), "missing field 'status'"),
    "status_a_number": (_edit_row(4, status=1), "'status' must be 'ok' or 'failed'"),
    "config_not_json": (_edit_row(4, config="{num_warps: 4"), "'config' must be a JSON object as text"),
    "config_a_json_list": (_edit_row(4, config="[4, 1]"), "'config' must be a JSON object as text"),
    "config_an_object_not_text": (_edit_row(4, config={"num_warps": 4}), "'config' must be a JSON object as text"),
    "acf_a_number": (_edit_row(4, acf=12), "'acf' must be a string"),
    "acf_missing": (_edit_row(4, acf=_DELETE), "missing field 'acf'"),
    "compile_s_a_string": (_edit_row(4, compile_s="fast"), "'compile_s' must be a number"),
    "error_a_number": (_edit_row(4, error=3), "'error' must be a string"),
    "extra_not_json": (_edit_row(4, extra="{oops"), "'extra' must be a JSON object as text"),
    "stages_a_list": (_edit_row(4, stages="[1]"), "'stages' must be a JSON object as text"),
    "objective_value_a_string": (_edit_row(5, registers="many"), "'registers' must be a finite number or null"),
    "objective_value_a_bool": (_edit_row(5, spill_bytes=True), "'spill_bytes' must be a finite number or null"),
    "objective_value_a_list": (_edit_row(5, theoretical_occupancy=[1]),
                               "'theoretical_occupancy' must be a finite number or null"),
    "line_duplicated": (_duplicate(3), "candidate 3 is stored twice"),
    "baseline_duplicated": (_duplicate(0), "candidate 0 is stored twice"),
    "id_reused_by_another_line": (_edit_row(6, candidate_id=5), "candidate 5 is stored twice"),
    "duplicated_then_torn": (_torn_and_duplicated, "candidate 3 is stored twice"),
    # the 2026-12-01 audit's: a told record cut short (its line torn), garbage appended with or without a newline
    "last_200_bytes_cut": (_cut_bytes(200), "does not match"),
    "garbage_appended": (_append(b"garbage {{{"), ":12: corrupt results line"),
    "garbage_line_appended": (_append(b"garbage {{{\n"), ":12: corrupt results line"),
    "objective_value_nan": (_raw_value(5, "registers", "NaN"), "'registers' must be a finite number or null"),
    "objective_value_infinity": (_raw_value(5, "spill_bytes", "-Infinity"), "'spill_bytes' must be a finite"),
    "results_missing_checkpoint_counts": (lambda r: (r / RESULTS).unlink(), "does not match"),
    "results_empty_checkpoint_counts": (lambda r: (r / RESULTS).write_bytes(b""), "does not match"),
    "a_told_line_removed": (lambda r: (r / RESULTS).write_text("".join(_lines(r)[:4] + _lines(r)[5:])),
                            "does not match"),
    "checkpoint_a_json_list": (_replace_file("checkpoint.json", b"[1]"), "unreadable loop checkpoint"),
    "checkpoint_not_utf8": (_replace_file("checkpoint.json", b"\xff"), "unreadable loop checkpoint"),
    "checkpoint_a_directory": (_replace_file("checkpoint.json", kind="dir"), "unreadable loop checkpoint"),
    "checkpoint_wrong_fields": (_replace_file("checkpoint.json", b'{"seq": "x"}'), "unreadable loop checkpoint"),
    "checkpoint_missing_after_generations": (lambda r: (r / "checkpoint.json").unlink(), "but the run has no"),
    "run_json_missing": (lambda r: (r / META).unlink(), "no run.json"),
    "run_json_not_json": (_replace_file(META, b"{not json"), "not valid JSON"),
    "run_json_empty": (_replace_file(META, b""), "not valid JSON"),
    "run_json_not_utf8": (_replace_file(META, b'{"seed": "\xff"}'), "not UTF-8"),
    "run_json_a_list": (_replace_file(META, b"[1, 2]"), "not a JSON object"),
    "run_json_nested_100k_deep": (_replace_file(META, b"[" * 100_000 + b"]" * 100_000), "not valid JSON"),
    "run_json_a_directory": (_replace_file(META, kind="dir"), "not a regular file"),
    "run_json_a_fifo": (_replace_file(META, kind="fifo"), "not a regular file"),
    "objective_columns_missing": (_edit_meta(objective_columns=_DELETE), "objective_columns: missing or not a list"),
    "objective_columns_empty": (_edit_meta(objective_columns=[]), "'objective_columns' is empty"),
    "objective_columns_a_string": (_edit_meta(objective_columns="registers"), "missing or not a list"),
    "objective_column_a_string": (_edit_meta(objective_columns=["registers"]), "objective_columns[0]: must be"),
    "objective_column_without_direction": (_edit_column(1, direction=_DELETE), "objective_columns[1]: must be"),
    "objective_column_direction_up": (_edit_column(1, direction="up"), "direction 'min' or 'max'"),
    "objective_column_name_a_number": (_edit_column(0, column=7), "objective_columns[0]: fields must be"),
    "objective_column_listed_twice": (_edit_meta(objective_columns=[
        {"column": "registers", "direction": "min", "objective": "registers", "shape": "wide"}] * 2),
        "a column is listed twice"),
    "seed_a_string": (_edit_meta(seed="0"), "'seed' must be an integer"),
    "seed_a_float": (_edit_meta(seed=1.5), "'seed' must be an integer"),
    "campaign_path_a_number": (_edit_meta(campaign_path=3), "'campaign_path' must be a string"),
    "campaign_copy_missing": (lambda r: (r / CAMPAIGN).unlink(), "missing campaign copy"),
    "campaign_copy_a_directory": (_replace_file(CAMPAIGN, kind="dir"), "not a regular file"),
    "campaign_copy_not_utf8": (_replace_file(CAMPAIGN, b"name: \xff\xfe\n"), "not UTF-8"),
    "campaign_copy_a_fifo": (_replace_file(CAMPAIGN, kind="fifo"), "not a regular file"),
    "campaign_copy_not_yaml": (_replace_file(CAMPAIGN, b"name: [unclosed\n"), "campaign.yaml:2: not valid YAML"),
    "campaign_copy_cut_short": (_replace_file(CAMPAIGN, b"name: quickstart\n"),
                                "campaign.yaml: kernel: required field is missing"),
    # the integrity rule (issue 45 defect 4; paretotune/front/integrity.py)
    "objective_value_edited": (_shift_value(2, "registers", -8.0),
                               "'registers' is "),  # ..., but the record's own measurement (extra.wide) gives ...
    "derived_value_edited": (_shift_value(1, "theoretical_occupancy", 6.25), "own measurement (extra.wide) gives"),
    "baseline_value_edited": (_shift_value(-1, "spill_bytes", 64.0), "candidate 0 (record 1): 'spill_bytes' is 64"),
    "measurement_edited_not_the_value": (
        _edit_extra(0, wide={"registers": 1, "spill_stores": 0, "spill_loads": 0, "stack": 0, "static_shared": 0,
                             "dynamic_shared": 16, "num_warps": 4}), "own measurement (extra.wide) gives 1.0"),
    "blank_line_in_the_middle": (_insert_line(3, "\n"), f"{RESULTS}:4: blank line"),
    "blank_line_at_the_end": (_append(b"\n"), ":12: blank line"),
    "line_of_spaces": (_insert_line(1, "   \n"), f"{RESULTS}:2: blank line"),
    "campaign_copy_objectives_changed": (_campaign_edit("  - spill_bytes            # min\n", ""),
                                         "campaign.yaml: differs from the campaign this run was made with"),
    "campaign_copy_budget_changed": (_campaign_edit("pool_size: 9", "pool_size: 12"),
                                     "campaign.yaml: differs from the campaign this run was made with"),
    "campaign_hash_a_number": (_edit_meta(campaign_sha256=12), "'campaign_sha256' must be a string"),
    "direction_flipped_in_run_json": (_edit_column(1, direction="max"),
                                      "objective column 'registers' has direction 'max', but its objective"),
    "second_baseline": (_edit_row(3, is_baseline=True), "candidate 3 claims to be the baseline"),
    "twin_of_nothing": (_edit_extra(1, twin_of=999), "the no-ACF twin of candidate 999, names no stored candidate"),
    "twin_with_an_acf": (_edit_extra(1, twin_of=0), "the no-ACF twin of candidate 0, has an ACF"),
    "acf_file_edited": (_edit_acf, "the ACF's content does not match its name"),
    "acf_file_a_fifo": (_acf_a_fifo, ".acf: not a regular file (a pipe or device)"),
    "acf_name_a_path": (_edit_row(4, acf="../../../etc/passwd"), "candidate 4 names the ACF '../../../etc/passwd'"),
}


def _commands(run: Path, campaign: Path) -> dict[str, list[str]]:
    return {
        "front": ["front", str(run)],
        "front-json": ["front", str(run), "--json"],
        "report": ["report", str(run)],
        "export": ["export", str(run)],
        "resume": ["resume", str(run), "--quiet"],
        "validate": ["validate", str(run)],
        "ship": ["ship", str(run), "--out", str(run.parent / "shipped")],
        "run-resume": ["run", str(campaign), "--resume", "--out", str(run), "--quiet"],
    }


COMMANDS = list(_commands(Path("r"), Path("c")))


def test_enough_cases() -> None:
    assert len(DAMAGES) * len(COMMANDS) >= 200


@pytest.fixture
def damaged(base_run: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    run = Path(shutil.copytree(base_run, tmp_path / "run", symlinks=True))
    DAMAGES[request.param][0](run)
    return run


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("damaged", sorted(DAMAGES), indirect=True)
def test_damaged_run_is_refused(damaged: Path, command: str, base_run: Path, request: pytest.FixtureRequest,
                                capsys: pytest.CaptureFixture[str]) -> None:
    case = request.node.callspec.params["damaged"]
    before = tree_digest(damaged)
    code = main(_commands(damaged, base_run.parent / "quickstart-small.yaml")[command])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2, captured.err
    assert len(lines) == 1 and lines[0].startswith("paretotune: error: "), captured.err
    assert "Traceback" not in captured.err + captured.out
    expected = DAMAGES[case][1]
    # `run --resume` without a run.json sees a folder with files, not a run: it refuses that instead
    if command == "run-resume" and case in {"run_json_missing", "run_json_a_directory", "run_json_a_fifo"}:
        expected = "already holds a run"
    assert expected in lines[0], lines[0]
    assert tree_digest(damaged) == before, "a refused command changed the run directory"


@pytest.mark.parametrize(("case", "command"), [("results_not_utf8", "front"), ("line_duplicated", "export"),
                                               ("run_json_a_list", "resume")])
def test_damaged_run_in_a_subprocess(base_run: Path, tmp_path: Path, case: str, command: str) -> None:
    run = Path(shutil.copytree(base_run, tmp_path / "run"))
    DAMAGES[case][0](run)
    before = tree_digest(run)
    argv = _commands(run, base_run.parent / "quickstart-small.yaml")[command]
    proc = subprocess.run(cli(*argv), env=cli_env(), capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and DAMAGES[case][1] in proc.stderr, proc.stderr
    assert tree_digest(run) == before


def test_resume_leaves_results_alone_when_it_refuses(base_run: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The audit's case: resume cut a torn last line off (22317 -> 22063 bytes) and only then refused the
    duplicated line before it. A refusing resume must not change a byte."""
    run = Path(shutil.copytree(base_run, tmp_path / "run"))
    _torn_and_duplicated(run)
    before = (run / RESULTS).read_bytes()
    assert main(["resume", str(run), "--quiet"]) == 2
    assert "stored twice" in capsys.readouterr().err
    assert (run / RESULTS).read_bytes() == before


READERS = ["front", "front-json", "report", "export", "validate"]


def test_a_torn_last_line_is_refused_until_resume_repairs_it(base_run: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A crash mid-append leaves a record's beginning without its newline (the loop commits after appending, so
    no checkpoint counts that record). The audit: front, report and export counted the records before it and
    exited 0. Now every reader refuses the stopped run naming the line and 'paretotune resume'; resume cuts the
    line off and every reader accepts the run again."""
    run = Path(shutil.copytree(base_run, tmp_path / "run"))
    whole = (run / RESULTS).read_bytes()
    n = len(_lines(run)) + 1
    _append(_lines(run)[4][:60].encode())(run)
    before = tree_digest(run)
    for command in READERS:
        code = main(_commands(run, base_run.parent / "quickstart-small.yaml")[command])
        lines = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(lines) == 1, (command, lines)
        assert f"{run / RESULTS}:{n}: the last line is torn" in lines[0], lines[0]
        assert f"'paretotune resume {run}' repairs it" in lines[0], lines[0]
    assert tree_digest(run) == before
    assert main(["resume", str(run), "--quiet"]) == 0, capsys.readouterr().err
    assert (run / RESULTS).read_bytes() == whole
    for command in READERS[:-1]:  # validate needs a GPU
        assert main(_commands(run, base_run.parent / "quickstart-small.yaml")[command]) == 0, command


# files only some commands read: (damage, commands that must refuse it, what the line must contain)
PARTIAL: dict[str, tuple[Callable[[Path], None], tuple[str, ...], str]] = {
    "validation_csv_a_directory": (lambda r: (r / "validation.csv").mkdir(), ("report",), "not a regular file"),
    "validation_csv_not_utf8": (lambda r: (r / "validation.csv").write_bytes(b"\xff\xfe,\n"), ("report",),
                                "not a readable CSV"),
}


@pytest.mark.parametrize(("case", "command"), [(c, cmd) for c, (_, cmds, _) in sorted(PARTIAL.items())
                                               for cmd in cmds])
def test_damaged_side_file_is_refused(base_run: Path, tmp_path: Path, case: str, command: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    run = Path(shutil.copytree(base_run, tmp_path / "run"))
    PARTIAL[case][0](run)
    before = tree_digest(run)
    assert main(_commands(run, base_run.parent / "quickstart-small.yaml")[command]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and PARTIAL[case][2] in lines[0], lines
    assert tree_digest(run) == before
