"""Hostile campaign files (the 2026-12-01 audit's and more, made here from configs/quickstart.yaml): each is
refused with exit code 2 and one line on stderr naming the file, no traceback, no run directory, quickly.

Together with the hand-written files of tests/fixtures/bad_campaigns/ (test_bad_campaigns.py) this covers
YAML bombs and nesting, paths that are not regular files, shapes the kernel does not take, out-of-range seeds
and names, bad knob values, ACF files that are not ACFs, and kernel files that exit, crash, hang or raise at
import time.
"""
from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from paretotune.cli import main

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART: dict[str, Any] = yaml.safe_load((ROOT / "configs" / "quickstart.yaml").read_text())
SOFTMAX = "paretotune.kernels.bundled.softmax:triton_softmax"


def _with(**changes: Any) -> Callable[[Path], str]:
    """The quickstart campaign with top-level sections replaced or merged (a None value deletes the key)."""
    def make(folder: Path) -> str:
        data = yaml.safe_load(yaml.safe_dump(QUICKSTART))
        for key, value in changes.items():
            if value is None:
                data.pop(key, None)
            elif isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key] = {**data[key], **value}
            else:
                data[key] = value
        return yaml.safe_dump(data, sort_keys=False)
    return make


def _shape(**params: Any) -> Callable[[Path], str]:
    return _with(shapes=[{"name": "wide", "M": 4096, "N": 16384, "dtype": "float16", **params}])


def _text(text: str) -> Callable[[Path], str]:
    return lambda folder: text


def _laughs(levels: int, width: int) -> str:
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def _acf_files(*names: str) -> Callable[[Path], str]:
    return _with(acf={"files": list(names)}, search={"engine": "grid", "generations": 1, "pool_size": 10})


def _acf_pack(name: str) -> Callable[[Path], str]:
    return _with(acf={"pack": name}, search={"engine": "grid", "generations": 1, "pool_size": 10})


def _kernel_file(name: str, source: str | bytes) -> Callable[[Path], str]:
    def make(folder: Path) -> str:
        (folder / name).write_bytes(source.encode() if isinstance(source, str) else source)
        return _with(kernel={"source": f"{name}:spec"})(folder)
    return make


def _knobs(**space: Any) -> Callable[[Path], str]:
    return _with(kernel={"source": SOFTMAX, "space": space})


FLOW_DEEP = "name: x\nkernel: " + "[" * 100_000 + "]" * 100_000 + "\n"
MAP_DEEP = "name: x\nkernel: " + "{a: " * 50_000 + "1" + "}" * 50_000 + "\n"
BLOCK_DEEP = "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v\n"

# name -> (make the campaign text in a folder, regex for what follows "<file>" in the message)
CASES: dict[str, tuple[Callable[[Path], str], str]] = {
    # -- YAML: bombs, depth, size, syntax
    "billion_laughs_9x9": (_text(_laughs(9, 9)), r": aliases expand to more than \d+ YAML nodes"),
    "billion_laughs_20x4": (_text(_laughs(20, 4)), r": aliases expand to more than \d+ YAML nodes"),
    "laughs_in_shapes": (_text(_laughs(8, 8).replace("a7:", "shapes:")), r": aliases expand"),
    "laughs_in_a_mapping": (_text("a: &a {x: 1, y: 1, z: 1}\n" + "".join(
        f"b{i}: &b{i} {{p: *{'a' if i == 0 else f'b{i - 1}'}, q: *{'a' if i == 0 else f'b{i - 1}'}, "
        f"r: *{'a' if i == 0 else f'b{i - 1}'}, s: *{'a' if i == 0 else f'b{i - 1}'}}}\n" for i in range(12))),
        r": aliases expand"),
    "flow_sequence_100k_deep": (_text(FLOW_DEEP), r":2: nested more than 64 levels deep"),
    "flow_mapping_50k_deep": (_text(MAP_DEEP), r":2: nested more than 64 levels deep"),
    "block_mapping_200_deep": (_text(BLOCK_DEEP), r":\d+: nested more than 64 levels deep"),
    "two_megabytes": (_text("name: " + "x" * (2 << 20) + "\n"), r": too large for a campaign file"),
    "nul_character": (_text("name: a\x00b\n"), r": not valid YAML \(unacceptable character"),
    "python_object_tag": (_text("name: !!python/object/apply:os.system ['true']\n"), r":1: not valid YAML"),
    "python_name_tag": (_text("kernel: !!python/name:os.system\n"), r":1: not valid YAML"),
    "unknown_local_tag": (_text("name: !secret x\n"), r":1: not valid YAML"),
    "undefined_alias": (_text("name: *nope\n"), r":1: not valid YAML"),
    "two_documents": (_text("name: a\n---\nname: b\n"), r"(:\d+)?: not valid YAML"),
    "tab_indentation": (_text("kernel:\n\tsource: x\n"), r":2: not valid YAML"),
    "unclosed_flow": (_text("shapes: [{M: 1\n"), r":\d+: not valid YAML"),
    "unclosed_quote": (_text('name: "abc\n'), r":\d+: not valid YAML"),
    "bare_scalar": (_text("just a string\n"), r": a campaign must be a YAML mapping \(got str\)"),
    "bare_number": (_text("42\n"), r": a campaign must be a YAML mapping \(got int\)"),
    "null_document": (_text("~\n"), r": the campaign file is empty"),
    "comments_only": (_text("# nothing\n"), r": the campaign file is empty"),
    "duplicate_key_behind_alias": (_text("x: &x {a: 1, a: 2}\n"), r":1: x\.a: duplicate key"),
    "merge_key_bomb": (_text("a: &a {p: 1}\n" + "".join(
        f"b{i}: &b{i} {{<<: *{'a' if i == 0 else f'b{i - 1}'}, q{i}: [*{'a' if i == 0 else f'b{i - 1}'}, "
        f"*{'a' if i == 0 else f'b{i - 1}'}, *{'a' if i == 0 else f'b{i - 1}'}]}}\n" for i in range(14))),
        r": aliases expand"),
    # -- names, seeds, sizes
    "name_10_megabytes": (_with(name="n" * (10 << 20)), r": too large for a campaign file"),
    "name_201_characters": (_with(name="n" * 201), r": name: String should have at most 200 characters"),
    "name_a_list": (_with(name=["a"]), r": name: Input should be a valid string"),
    # a name is never a path, whatever --out says (the 2026-12-01 audit: /some/dir and ../../../x wrote there)
    "name_an_absolute_path": (_with(name="/etc/passwd"), r": name: must not contain '/' or '\\'"),
    "name_climbs_out": (_with(name="../../../tmp/x"), r": name: must not contain '/' or '\\'"),
    "name_a_windows_path": (_with(name="..\\..\\x"), r": name: must not contain '/' or '\\'"),
    "name_dot_dot": (_with(name=".."), r": name: must not contain '\.\.'"),
    "name_with_nul": (_with(name="a\x00b"), r": name: must not contain control .*\(found '\\x00'\)"),
    "name_with_newline": (_with(name="two\nlines"), r": name: must not contain control .*\(found '\\n'\)"),
    "name_with_bidi_override": (_with(name="evil\u202etxt"), r": name: must not contain control .*\(found '\\u202e'\)"),
    "name_only_punctuation": (_with(name="*** ***"), r": name: needs a letter, a digit or '_'"),
    "name_null": (_with(name=None, kernel={"source": SOFTMAX, "space": {"num_warps": []}}),
                  r": kernel\.space: knob 'num_warps' has no values"),
    "seed_2_to_the_80": (_with(seed=2**80), r": seed: Input should be less than 4294967296"),
    "seed_2_to_the_32": (_with(seed=2**32), r": seed: Input should be less than 4294967296"),
    "seed_minus_one": (_with(seed=-1), r": seed: Input should be greater than or equal to 0"),
    "seed_a_float": (_with(seed=1.5), r": seed: Input should be a valid integer"),
    "seed_a_bool": (_with(seed=True), r": seed: Input should be a valid integer"),
    "seed_a_string_number": (_with(seed="7"), r": seed: Input should be a valid integer"),
    "shape_name_too_long": (_with(shapes=[{"name": "s" * 300, "M": 1, "N": 1}]),
                            r": shapes\[0\]\.name: String should have at most 200 characters"),
    "kernel_source_too_long": (_with(kernel={"source": "m" * 5000 + ":x"}),
                               r": kernel\.source: String should have at most 4096 characters"),
    # -- shapes the kernel does not take
    "shape_key_typo_dtyp": (_with(shapes=[{"name": "wide", "M": 4096, "N": 16384, "dtyp": "float32"}]),
                            r": shapes\[0\]\.dtyp: kernel 'triton_softmax' has no shape key 'dtyp' \(it reads: "
                            r"M, N, dtype\)"),
    "shape_extra_key_K": (_shape(K=64), r": shapes\[0\]\.K: kernel 'triton_softmax' has no shape key 'K'"),
    "shape_key_lowercase_m": (_with(shapes=[{"name": "w", "m": 4096, "N": 16384}]),
                              r": shapes\[0\]: kernel 'triton_softmax' cannot make inputs .*missing parameter 'M'"),
    "shape_second_has_typo": (_with(shapes=[{"name": "a", "M": 64, "N": 64},
                                            {"name": "b", "M": 64, "N": 64, "Nn": 3}], search={"pool_size": 16}),
                              r": shapes\[1\]\.Nn: kernel 'triton_softmax' has no shape key 'Nn'"),
    "shape_dtype_not_a_dtype": (_shape(dtype="float17"), r": shapes\[0\]: kernel 'triton_softmax' cannot make"),
    "shape_dtype_a_torch_function": (_shape(dtype="randn"), r": shapes\[0\]: kernel 'triton_softmax' cannot make"),
    "shape_negative_size": (_shape(M=-5), r": shapes\[0\]: kernel 'triton_softmax' cannot make inputs"),
    "shape_size_a_word": (_shape(N="wide"), r": shapes\[0\]: kernel 'triton_softmax' cannot make inputs"),
    "shape_size_a_mapping": (_shape(M={"a": 1}), r": shapes\[0\]\.M: must be a number or a string"),
    "shape_size_null": (_shape(M=None), r": shapes\[0\]\.M: must be a number or a string"),
    "shapes_a_mapping": (_with(shapes={"M": 1}), r": shapes: Input should be a valid list"),
    "shape_a_string": (_with(shapes=["wide"]), r": shapes\[0\]: Input should be a valid dictionary"),
    # -- knob values
    "num_warps_minus_3_and_many": (_knobs(num_warps=[-3, "many"]),
                                   r": kernel\.space\.num_warps: -3 is not a valid value \(a power of two"),
    "num_warps_not_a_power_of_two": (_knobs(num_warps=[4, 6]), r": kernel\.space\.num_warps: 6 is not a valid"),
    "num_warps_64": (_knobs(num_warps=[64]), r": kernel\.space\.num_warps: 64 is not a valid value"),
    "num_warps_zero": (_knobs(num_warps=[0]), r": kernel\.space\.num_warps: 0 is not a valid value"),
    "num_warps_a_float": (_knobs(num_warps=[4.0]), r": kernel\.space\.num_warps: 4\.0 is not a valid value"),
    "num_warps_true": (_knobs(num_warps=[True]), r": kernel\.space\.num_warps: True is not a valid value"),
    "num_warps_a_list": (_knobs(num_warps=[[4]]), r": kernel\.space\.num_warps: \[4\] is not a valid value"),
    "num_warps_a_mapping": (_knobs(num_warps=[{"a": 1}]), r": kernel\.space: knob 'num_warps': values must be"),
    "num_stages_zero": (_knobs(num_stages=[0]), r": kernel\.space\.num_stages: 0 is not a valid value"),
    "num_stages_a_string": (_knobs(num_stages=["1"]), r": kernel\.space\.num_stages: '1' is not a valid value"),
    "knob_values_not_a_list": (_knobs(num_warps=4), r": kernel\.space\.num_warps: Input should be a valid list"),
    "knob_value_repeated": (_knobs(num_warps=[4, 4]), r": kernel\.space: knob 'num_warps' lists a value twice"),
    "default_outside_space": (_with(kernel={"source": SOFTMAX, "default": {"num_warps": 2}}),
                              r": kernel\.default\.num_warps: value 2 not in the search space"),
    # -- budgets and fields
    "generations_a_billion": (_with(search={"generations": 10**9}),
                              r": search\.generations: Input should be less than or equal to 10000"),
    "pool_size_a_million": (_with(search={"pool_size": 10**6}),
                            r": search\.pool_size: Input should be less than or equal to 4096"),
    "workers_1000": (_with(evaluation={"workers": 1000}),
                     r": evaluation\.workers: Input should be less than or equal to 256"),
    "workers_a_string": (_with(evaluation={"workers": "2"}), r": evaluation\.workers: Input should be a valid integer"),
    "compile_timeout_zero": (_with(evaluation={"compile_timeout_s": 0}),
                             r": evaluation\.compile_timeout_s: Input should be greater than 0"),
    "compile_timeout_nan": (_with(evaluation={"compile_timeout_s": float("nan")}),
                            r": evaluation\.compile_timeout_s: Input should be a finite number"),
    "gpu_spares_99": (_with(evaluation={"gpu_spares": 99}), r": evaluation\.gpu_spares: Input should be less than"),
    "device_cpu": (_with(evaluation={"device": "cpu"}), r": evaluation\.device: 'cpu' is not a CUDA device"),
    "device_cuda_x": (_with(evaluation={"device": "cuda:x"}), r": evaluation\.device: 'cuda:x' is not a CUDA"),
    "wall_clock_zero": (_with(search={"wall_clock_s": 0}), r": search\.wall_clock_s: Input should be greater"),
    "evaluation_a_list": (_with(evaluation=[1]), r": evaluation: Input should be a valid dictionary"),
    "execution_unknown_key": (_with(execution={"host": "evil.example"}), r": execution\.host: unknown field"),
    "objective_with_params_unknown": (_with(objectives=[{"name": "registers", "evil": 1}]),
                                      r": objectives\[0\]\.evil: objective 'registers' takes no parameters"),
    "objective_an_integer": (_with(objectives=[3]), r": objectives\[0\]: Input should be a valid dictionary"),
    "objectives_a_string": (_with(objectives="registers"), r": objectives: Input should be a valid list"),
    "target_sm_1000": (_with(target="sm_1000"), r": target: unknown target 'sm_1000'"),
    "unknown_top_level_key": (_with(hooks={"pre": "rm -rf /"}), r": hooks: unknown field"),
    # -- kernels
    "kernel_source_path_traversal": (_with(kernel={"source": "../../../../etc/passwd.py:x"}),
                                     r": kernel\.source: kernel file not found: /etc/passwd\.py"),
    "kernel_module_os": (_with(kernel={"source": "os:system"}),
                         r": kernel\.source: 'system' is a builtin_function_or_method, not a TritonKernel"),
    "kernel_module_does_not_exist": (_with(kernel={"source": "no_such_module_xyz:spec"}),
                                     r": kernel\.source: cannot import module 'no_such_module_xyz'"),
    "kernel_file_sys_exit": (_kernel_file("k_exit.py", "import sys\nsys.exit(3)\n"),
                             r": kernel\.source: cannot import .*k_exit\.py \(it called sys\.exit\(3\)"),
    "kernel_file_sys_exit_zero": (_kernel_file("k_exit0.py", "raise SystemExit\n"),
                                  r": kernel\.source: cannot import .*k_exit0\.py \(it called sys\.exit\(None\)"),
    "kernel_file_os_exit": (_kernel_file("k_osexit.py", "import os\nos._exit(0)\n"),
                            r": kernel\.source: importing .*k_osexit\.py ended the process \(exit code 0"),
    "kernel_file_segfault": (_kernel_file("k_segv.py", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"),
                             r": kernel\.source: importing .*k_segv\.py ended the process \(killed by signal 11"),
    "kernel_file_endless_loop": (_kernel_file("k_loop.py", "while True:\n    pass\n"),
                                 r": kernel\.source: importing .*k_loop\.py did not finish within 2 s"),
    "kernel_file_sleeps": (_kernel_file("k_sleep.py", "import time\ntime.sleep(3600)\n"),
                           r": kernel\.source: importing .*k_sleep\.py did not finish within 2 s"),
    # the audit: a file that forked and finished was "did not finish within 5 s"; one that forked and exited too
    "kernel_file_forks_then_exits": (_kernel_file("k_forkexit.py", "import os, time\nif os.fork() == 0:\n"
                                                  "    time.sleep(30)\n    os._exit(0)\nos._exit(3)\n"),
                                     r": kernel\.source: importing .*k_forkexit\.py ended the process \(exit code 3"),
    "kernel_file_forks_and_lacks_spec": (_kernel_file("k_fork.py", "import os, time\nif os.fork() == 0:\n"
                                                      "    time.sleep(30)\n    os._exit(0)\n"),
                                         r": kernel\.source: module 'k_fork\.py' has no attribute 'spec'"),
    "kernel_file_raises": (_kernel_file("k_raise.py", "raise RuntimeError('boom\\nsecond line')\n"),
                           r": kernel\.source: cannot import .*k_raise\.py \(RuntimeError: boom second line\)"),
    "kernel_file_keyboard_interrupt": (_kernel_file("k_kbd.py", "raise KeyboardInterrupt\n"),
                                       r": kernel\.source: cannot import .*k_kbd\.py \(KeyboardInterrupt"),
    "kernel_file_recursion": (_kernel_file("k_rec.py", "def f():\n    return f()\nf()\n"),
                              r": kernel\.source: cannot import .*k_rec\.py \(RecursionError"),
    "kernel_file_prints_then_raises": (_kernel_file("k_print.py", "print('noise ' * 100)\nraise ValueError('x')\n"),
                                       r": kernel\.source: cannot import .*k_print\.py \(ValueError: x\)"),
    "kernel_file_not_utf8": (_kernel_file("k_bytes.py", b"x = '\xff\xfe'\n"),
                             r": kernel\.source: cannot import .*k_bytes\.py \(SyntaxError"),
    "kernel_file_attr_missing": (_kernel_file("k_empty.py", "x = 1\n"),
                                 r": kernel\.source: module 'k_empty\.py' has no attribute 'spec'"),
    "kernel_file_attr_not_a_kernel": (_kernel_file("k_int.py", "spec = 42\n"),
                                      r": kernel\.source: 'spec' is a int, not a TritonKernel"),
    # -- ACF files that are not ACFs
    "acf_etc_passwd": (_acf_files("/etc/passwd"), r": acf\.files\[0\]: /etc/passwd: a text file, not an ACF"),
    "acf_empty_file": (_acf_files("empty.acf"), r": acf\.files\[0\]: .*empty\.acf: empty file"),
    "acf_three_mebibytes": (_acf_files("big.acf"), r": acf\.files\[0\]: .*big\.acf is 3145728 bytes, too large"),
    "acf_text_file": (_acf_files("notes.acf"), r": acf\.files\[0\]: .*notes\.acf: a text file, not an ACF"),
    # the audit: a FIFO or a directory was "no such ACF file"
    "acf_a_directory": (_acf_files("adir"), r": acf\.files\[0\]: .*adir: not a regular file \(a directory\)"),
    "acf_a_fifo": (_acf_files("fifo.acf"), r": acf\.files\[0\]: .*fifo\.acf: not a regular file \(a pipe or device\)"),
    "acf_dev_zero": (_acf_files("/dev/zero"), r": acf\.files\[0\]: /dev/zero: not a regular file \(a pipe or device\)"),
    "acf_second_missing": (_acf_files("good.acf", "missing.acf"), r": acf\.files\[1\]: no such ACF file"),
    "acf_files_empty_list": (_acf_files(), r": acf\.files: List should have at least 1 item"),
    "acf_files_a_number": (_with(acf={"files": [3]}), r": acf\.files\[0\]: Input should be a valid string"),
    "acf_pack_garbage_zip": (_acf_pack("garbage.zip"), r": acf\.pack: .*garbage\.zip is not a zip file"),
    "acf_pack_without_acfs": (_acf_pack("noacf.zip"), r": acf\.pack: .*noacf\.zip holds no \.acf file"),
    "acf_pack_with_empty_acf": (_acf_pack("emptyacf.zip"), r": acf\.pack: .*emptyacf\.zip!a\.acf: empty file"),
    "acf_pack_text_acf": (_acf_pack("textacf.zip"), r": acf\.pack: .*textacf\.zip!a\.acf: a text file, not an ACF"),
    "acf_pack_missing": (_acf_pack("nothere.zip"), r": acf\.pack: no such file: .*nothere\.zip"),
    "acf_pack_a_directory": (_acf_pack("adir"), r": acf\.pack: .*adir: not a regular file \(a directory\)"),
    "acf_pack_a_fifo": (_acf_pack("fifo.acf"), r": acf\.pack: .*fifo\.acf: not a regular file \(a pipe or device\)"),
}


def _acf_folder(folder: Path) -> None:
    """The files the ACF cases name, next to the campaign."""
    (folder / "empty.acf").write_bytes(b"")
    with open(folder / "big.acf", "wb") as fh:
        fh.truncate(3 << 20)
    (folder / "notes.acf").write_text("controls = fast\n" * 20)
    (folder / "good.acf").write_bytes(bytes(range(256)))
    (folder / "adir").mkdir()
    os.mkfifo(folder / "fifo.acf")
    (folder / "garbage.zip").write_bytes(os.urandom(512))
    for name, members in (("noacf.zip", {"readme.txt": b"hi"}), ("emptyacf.zip", {"a.acf": b""}),
                          ("textacf.zip", {"a.acf": b"plain text\n"})):
        with zipfile.ZipFile(folder / name, "w") as z:
            for member, data in members.items():
                z.writestr(member, data)


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2, captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err + captured.out, captured.err
    return lines[0]


def test_enough_hostile_files() -> None:
    fixtures = list((ROOT / "tests" / "fixtures" / "bad_campaigns").glob("*.yaml"))
    assert len(CASES) + len(SPECIAL_PATHS) + len(fixtures) >= 120


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_campaign_is_refused(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARETOTUNE_IMPORT_TIMEOUT_S", "2")
    make, expected = CASES[case]
    _acf_folder(tmp_path)
    path = tmp_path / "campaign.yaml"
    path.write_text(make(tmp_path))
    out = tmp_path / "out"
    line = _refused(["run", str(path), "--out", str(out), "--quiet"], capsys)
    # the file as given, or resolved (errors found after loading name the resolved path)
    head = next((p for p in (f"paretotune: error: {path}", f"paretotune: error: {path.resolve()}")
                 if line.startswith(p)), None)
    assert head is not None, line
    assert re.match(expected, line.removeprefix(head)), f"{case}: {line}"
    assert not out.exists()


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("name", ["ABSOLUTE", "../../../escaped", "a\x00b", "line\nbreak"])
def test_a_name_never_chooses_where_the_run_goes(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --out a run goes to runs/<name>-<time> under the working directory. The audit's names: an
    absolute folder was written to (exit 0), ../../../x landed outside runs/, a NUL was an internal error.
    Each is refused in one line naming the field, and nothing is written anywhere."""
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    name = str(tmp_path / "elsewhere") if name == "ABSOLUTE" else name
    path = work / "campaign.yaml"
    path.write_text(_with(name=name)(work))
    before = _tree(tmp_path)
    line = _refused(["run", str(path), "--quiet"], capsys)
    assert line.startswith(f"paretotune: error: {path}: name: "), line
    assert _tree(tmp_path) == before


def test_a_name_is_sanitised_into_a_folder_under_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spaces, colons and parentheses are not refused: they become '-' in the run folder's name."""
    monkeypatch.chdir(tmp_path)
    text = _with(name="my kernel: v2 (fp16)", search={"generations": 1, "pool_size": 9},
                 evaluation={"workers": 1})(tmp_path)
    (tmp_path / "campaign.yaml").write_text(text)
    assert main(["run", "campaign.yaml", "--quiet"]) == 0
    runs = [p.name for p in (tmp_path / "runs").iterdir()]
    assert len(runs) == 1 and re.fullmatch(r"my-kernel-v2-fp16-\d{8}-\d{6}", runs[0]), runs
    assert (tmp_path / "runs" / runs[0] / "results.jsonl").is_file()


def _fifo(folder: Path) -> Path:
    os.mkfifo(folder / "c.yaml")
    return folder / "c.yaml"


def _dir(folder: Path) -> Path:
    (folder / "c.yaml").mkdir()
    return folder / "c.yaml"


def _link_to_dev_zero(folder: Path) -> Path:
    (folder / "c.yaml").symlink_to("/dev/zero")
    return folder / "c.yaml"


def _huge_sparse(folder: Path) -> Path:
    with open(folder / "c.yaml", "wb") as fh:
        fh.truncate(1 << 30)
    return folder / "c.yaml"


def _not_utf8(folder: Path) -> Path:
    (folder / "c.yaml").write_bytes(b"name: \xff\xfe\n")
    return folder / "c.yaml"


SPECIAL_PATHS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "fifo": (_fifo, "not a regular file"),
    "directory": (_dir, "is a directory, not a campaign file"),
    "dev_zero": (lambda folder: Path("/dev/zero"), "not a regular file"),
    "symlink_to_dev_zero": (_link_to_dev_zero, "not a regular file"),
    "dev_stdin": (lambda folder: Path("/dev/stdin"), ""),
    "one_gibibyte_sparse": (_huge_sparse, "too large for a campaign file"),
    "not_utf8": (_not_utf8, "not UTF-8 text"),
    "missing": (lambda folder: folder / "nope.yaml", "no such campaign file"),
}


@pytest.mark.parametrize("case", sorted(SPECIAL_PATHS))
def test_campaign_path_that_is_not_a_campaign_file(case: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before reading: a FIFO or /dev/zero must neither hang nor fill memory."""
    make, expected = SPECIAL_PATHS[case]
    path = make(tmp_path)
    line = _refused(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"], capsys)
    assert line.startswith(f"paretotune: error: {path}: ") and expected in line, line
    assert not (tmp_path / "out").exists()
