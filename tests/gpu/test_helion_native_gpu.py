"""Issue 28 on a real GPU, on kernels of the project's own (tests/fixtures/helion_native): the four failure
classes seen on Helion's pretuned kernels on the H200 at 74b6e06 each run as a campaign with runtime measured.

- a user-keyed AOT heuristic named after its source file: the baseline is that heuristic's pick per shape;
- a kernel returning a tuple: the baseline and every candidate are checked output by output;
- a kernel updating its argument in place: every checked launch starts from pristine inputs, the timing rounds
  restore it, and run.json says so;
- a wrong ACF-free candidate of the in-place kernel (its own result fed back) would fail; the correct ones pass.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from paretotune.cli import main as cli

pytestmark = pytest.mark.gpu
FIX = Path(__file__).resolve().parents[1] / "fixtures" / "helion_native"


def _campaign(tmp_path: Path, source: str, inputs: str, shapes: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(f"""
        name: helion-native-gpu
        kernel: {{source: {FIX / source}, inputs: {FIX / inputs}}}
        shapes: {shapes}
        objectives: [runtime]
        acf: {{search_space: ptxas-13.3}}
        search: {{strategy: acf-only, engine: compileiq, generations: 1, pool_size: 8}}
        evaluation: {{workers: 2, warmup_ms: 2, rep_ms: 10}}
    """))
    return path


def _run(tmp_path: Path, campaign: Path) -> tuple[list[dict], dict]:
    out = tmp_path / "run"
    assert cli(["run", str(campaign), "--out", str(out), "--quiet"]) == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return records, json.loads((out / "run.json").read_text())


def test_user_keyed_heuristic_named_after_its_source_file_is_the_baseline(tmp_path: Path) -> None:
    records, meta = _run(tmp_path, _campaign(tmp_path, "rows_keyed.py:scale_keyed", "rows_keyed.py:inputs",
                                             "[{name: narrow, M: 4096, N: 1024}, {name: wide, M: 4096, N: 4096}]"))
    baselines = meta["kernel"]["baselines"]
    assert (baselines["narrow"]["block_sizes"], baselines["narrow"]["num_warps"]) == ([8], 2)
    assert (baselines["wide"]["block_sizes"], baselines["wide"]["num_warps"]) == ([1], 16)
    assert meta["kernel"]["baseline_sources"]["wide"] == "AOT heuristic _helion_aot_rows_keyed_cuda_sm90.py (sm_90)"
    assert records[0]["is_baseline"] and records[0]["status"] == "ok"
    assert sum(r["status"] == "ok" for r in records) >= 4


def test_a_kernel_returning_a_tuple_is_tuned(tmp_path: Path) -> None:
    records, _ = _run(tmp_path, _campaign(tmp_path, "outputs.py:scale_and_shift", "outputs.py:inputs",
                                          "[{name: s, M: 4096, N: 2048}]"))
    assert records[0]["status"] == "ok", records[0]["error"]
    assert sum(r["status"] == "ok" for r in records) >= 4
    assert not any("clone" in (r["error"] or "") for r in records)


def test_an_in_place_kernel_is_checked_and_timed_from_pristine_inputs(tmp_path: Path) -> None:
    records, meta = _run(tmp_path, _campaign(tmp_path, "outputs.py:halve_rows_in_place", "outputs.py:inputs",
                                             "[{name: s, M: 4096, N: 2048}]"))
    assert records[0]["status"] == "ok", records[0]["error"]
    assert sum(r["status"] == "ok" for r in records) >= 4
    assert meta["measurement"]["s"]["restored_inputs"] == [0]  # x, the argument it writes


def test_an_in_place_kernel_with_declared_writes_is_timed_as_its_kernel_alone(tmp_path: Path) -> None:
    """The factory names the argument the kernel writes: the check compares it, and one timed call runs the
    kernel and nothing else on the GPU (the adapter once gathered the written arguments inside every launch)."""
    records, meta = _run(tmp_path, _campaign(tmp_path, "outputs.py:halve_rows_in_place",
                                             "outputs.py:declared_inputs", "[{name: s, M: 4096, N: 2048}]"))
    assert records[0]["status"] == "ok", records[0]["error"]
    assert sum(r["status"] == "ok" for r in records) >= 4
    work = meta["measurement"]["s"]["gpu_work"]
    assert len(work) == 1 and "halve_rows_in_place" in work[0], work


def test_an_in_place_candidate_fed_its_own_output_is_caught() -> None:
    """The check itself: a candidate that halves twice (what launching on the baseline's output amounts to) is
    a wrong answer, while the same config launched once is right."""
    import dataclasses

    from paretotune.campaign.user_code import import_object
    from paretotune.measure.arms import check_candidate
    from paretotune.kernels.helion import HelionAdapter, spec_from_kernel
    from paretotune.records import Shape
    from paretotune.toolchain.arch import TARGETS

    kernel = import_object("outputs.py:halve_rows_in_place", FIX, "test")
    spec = spec_from_kernel(kernel, import_object("outputs.py:inputs", FIX, "test"))
    shape = Shape("s", {"M": 1024, "N": 1024})
    adapter = HelionAdapter("halve", spec)
    adapter.use_campaign((shape,), TARGETS["sm_90"], True)
    base = adapter.default_config(shape)
    assert check_candidate(adapter, base, shape, None, "cuda", seed=11) is None

    class Twice(HelionAdapter):
        def prepare(self, config, shape, acf, inputs):  # type: ignore[no-untyped-def]
            prepared = super().prepare(config, shape, acf, inputs)
            if config.get("num_warps") != base.get("num_warps"):
                once = prepared.launch
                prepared = dataclasses.replace(prepared, launch=lambda: (once(), once())[1])
            return prepared

    twice = Twice("halve", spec)
    twice.use_campaign((shape,), TARGETS["sm_90"], True)
    other = {**base, "num_warps": 8 if base.get("num_warps") != 8 else 4}
    problem = check_candidate(twice, other, shape, None, "cuda", seed=11)
    assert problem is not None and "wrong answer" in problem
