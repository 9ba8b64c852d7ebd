"""Every malformed campaign is refused before any compile: one line on stderr naming the file and the field,
exit code 2, no traceback, and no run directory created.

The table pairs each file in tests/fixtures/bad_campaigns/ with the field path the message must name right
after the file name (``<file>: <field>...``; a YAML syntax error or duplicate key names ``<file>:<line>``).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from paretotune.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bad_campaigns"

# file stem -> what follows "<file>: " in the message (a regex)
TABLE: dict[str, str] = {
    "missing_kernel": r"kernel: required field is missing",
    "kernel_source_no_colon": r"kernel\.source: .*must be 'module:attr'",
    "kernel_source_not_a_string": r"kernel\.source: Input should be a valid string",
    "kernel_key_typo": r"kernal: unknown field \(did you mean 'kernel'\?\)",
    "kernel_space_empty_knob": r"kernel\.space: knob 'num_warps' has no values",
    "kernel_space_unknown_knob": r"kernel\.space\.BLOCKZ: unknown kernel knob 'BLOCKZ'",
    "kernel_default_unknown_knob": r"kernel\.default: unknown kernel knob 'num_warp'",
    "kernel_default_value_outside_space": r"kernel\.default\.num_warps: value 3 not in",
    "kernel_unknown_module": r"kernel\.source: cannot import module 'paretotune\.kernels\.bundled\.sofmax'",
    "kernel_unknown_attribute": r"kernel\.source: module '.*softmax' has no attribute 'triton_sofmax'",
    "kernel_file_missing": r"kernel\.source: kernel file not found: .*no_such_file\.py",
    "kernel_file_broken": r"kernel\.source: cannot import .*broken_kernel\.py \(SyntaxError",
    "kernel_not_a_kernel_spec": (r"kernel\.source: 'softmax_kernel' is a bare Triton kernel: paretotune also needs "
                                 r"its inputs and grid; add `softmax_kernel_spec = "
                                 r"paretotune\.TritonKernel\(softmax_kernel, inputs="),
    "shapes_missing": r"shapes: required field is missing",
    "shapes_empty": r"shapes: List should have at least 1 item",
    "shapes_not_a_list": r"shapes: Input should be a valid list",
    "shapes_repeated_name": r"shapes: shape names must be unique \(repeated: wide\)",
    "shape_without_sizes": r"shapes\[0\]: no sizes given",
    "shape_missing_size": r"shapes\[0\]: kernel 'triton_softmax' cannot make inputs .*missing parameter 'N'",
    "shape_unknown_dtype": r"shapes\[0\]: kernel 'triton_softmax' cannot make inputs .*float17",
    # a Helion kernel's shapes go through its adapter's check_shape too (kernels/base.py: every adapter has one)
    "shape_helion_key_typo": r"shapes\[0\]\.dtyp: kernel 'helion_softmax' has no shape key 'dtyp' \(it reads: M, N",
    "shape_helion_missing_size": r"shapes\[0\]: kernel 'helion_softmax' cannot make inputs .*missing parameter 'N'",
    "shape_helion_bad_dtype": r"shapes\[0\]: kernel 'helion_softmax' cannot make inputs .*has no attribute 'float17'",
    "shape_size_is_a_list": r"shapes\[0\]\.M: must be a number or a string",
    "objectives_missing": r"objectives: required field is missing",
    "objectives_empty": r"objectives: List should have at least 1 item",
    "objective_unknown": r"objectives\[1\]\.name: unknown objective 'spil_bytes' \(known: .*spill_bytes",
    "objective_not_a_name": r"objectives\[1\]: Input should be a valid dictionary",
    "objective_unexpected_parameter": r"objectives\[0\]\.per_thread: objective 'registers' takes no parameters",
    "objective_listed_twice": r"objectives\[2\]: 'registers' is listed twice \(also objectives\[0\]\)",
    "target_unknown": r"target: unknown target 'sm_91' \(known: .*sm_90",
    "acf_search_space_unknown_version": r"acf\.search_space: unknown search space 'ptxas-12\.8' \(known: ",
    "acf_files_and_pack": r"acf: give either files or pack, not both",
    "acf_file_missing": r"acf\.files\[0\]: no such ACF file: .*missing\.acf",
    "acf_key_typo": r"acf\.searchspace: unknown field \(did you mean 'search_space'\?\)",
    "acf_made_for_other_ptxas": r"acf\.files\[0\]: .*made_for_13_2\.acf: ACF made for ptxas 13\.2, but ptxas is 13\.3",
    "acf_made_for_other_arch": r"acf\.files\[0\]: .*made_for_sm_80\.acf: ACF made for sm_80, but the target is sm_90",
    "search_engine_unknown": r"search\.engine: unknown engine 'compileqi' \(known: .*compileiq",
    "search_engine_cannot_sample_acfs": r"search(\.engine)?: .*grid .*generated ACFs",
    "search_strategy_unknown": r"search\.strategy: Input should be 'joint', 'sequential' or 'acf-only'",
    "search_sequential_without_acfs": r"search(\.strategy)?: .*sequential tunes configs, then ACFs",
    "search_generations_zero": r"search\.generations: Input should be greater than or equal to 1",
    "search_generations_a_string": r"search\.generations: Input should be a valid integer",
    "search_pool_size_below_minimum": r"search\.pool_size: Input should be greater than or equal to 6",
    "search_pool_size_too_small_for_objectives": r"search\.pool_size: 8 is too small for 3 objective column",
    "search_wall_clock_negative": r"search\.wall_clock_s: Input should be greater than 0",
    "evaluation_workers_zero": r"evaluation\.workers: Input should be greater than or equal to 1",
    "evaluation_timeout_negative": r"evaluation\.compile_timeout_s: Input should be greater than 0",
    "evaluation_device_not_cuda": r"evaluation\.device: 'gpu0' is not a CUDA device",
    "evaluation_timing_unknown": r"evaluation\.timing: Input should be .auto., .events., .cudagraph. or .cupti.",
    "execution_backend_unknown": r"execution\.backend: Input should be 'local' or 'ray'",
    "seed_not_an_integer": r"seed: Input should be a valid integer",
    "name_empty": r"name: String should have at least 1 character",
    "top_level_key_typo": r"objective: unknown field",
    "duplicate_key": r"(?<=:17: )search: duplicate key",
    "not_a_mapping": r"a campaign must be a YAML mapping \(got list\)",
    "invalid_yaml": r"(?<=:\d: )not valid YAML",
    "empty_file": r"the campaign file is empty",
}


def test_the_table_covers_every_fixture() -> None:
    assert sorted(TABLE) == sorted(p.stem for p in FIXTURES.glob("*.yaml"))
    assert len(TABLE) >= 30


@pytest.mark.parametrize("stem", sorted(TABLE))
def test_bad_campaign_is_refused_with_the_field_named(stem: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / f"{stem}.yaml"
    out = tmp_path / "run"
    code = main(["run", str(path), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err  # one line, no traceback
    assert lines[0].startswith(f"paretotune: error: {path}"), lines[0]
    after = lines[0].removeprefix(f"paretotune: error: {path}")
    assert re.match(rf"(:\d+)?: {TABLE[stem]}", after), f"{stem}: {lines[0]}"
    assert not out.exists(), "a refused campaign must not create its run directory"
