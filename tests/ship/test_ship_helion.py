"""``paretotune ship`` for a Helion AOT kernel: the written heuristic imports, Helion finds and keys it as it keys
the old one, unchanged buckets answer exactly as before (shapes outside the campaign too), changed ones carry
their winner's ACF (a file that exists, a config ``helion.Config`` takes), and only validated, re-checked winners
on every shape of a bucket change it."""
from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from paretotune.campaign.load import campaign_from_text
from paretotune.campaign.resolve import make_adapter
from paretotune.cli import main as cli
from paretotune.errors import UserError
from paretotune.ship.make import ship_run
from paretotune.kernels.helion import import_helion
from paretotune.kernels.helion_heuristic import answering_as, find_heuristic, heuristic_config
from paretotune.records import Shape
from paretotune.store import RunDir
from paretotune.store.run_dir import text_sha256
from paretotune.toolchain.ptxas import export_for_triton, find_ptxas
from tests.ship.conftest import HEURISTIC, acf_candidates, validate

MODULE = "_helion_aot_scale_rows_cuda_sm90.py"
# the campaign's shapes plus shapes it never ran: N=256 falls in bucket 0, N=2048 in bucket 1, N=16384 in bucket 2
PROBES = {"a": (256, 512), "b": (512, 1024), "c": (512, 4096), "narrower": (64, 256), "mid": (128, 2048),
          "widest": (64, 16384)}


@pytest.fixture(autouse=True)
def _ptxas() -> None:
    export_for_triton(find_ptxas())  # what Triton runs in the user's process (the shipped file checks it)


def kernel_and_adapter(run: Path) -> Any:
    campaign = campaign_from_text(RunDir(run).campaign_text(), Path(RunDir(run).meta()["campaign_path"]))
    adapter = make_adapter(campaign)
    return adapter.kernel, adapter


def answers(kernel: Any, adapter: Any, path: Path) -> dict[str, dict[str, Any]]:
    """What ``autotune_scale_rows`` in ``path`` returns for each probe shape (called as Helion calls it)."""
    return {name: heuristic_config(kernel, path, adapter.aot.args(Shape(name, {"M": m, "N": n}), "meta"))
            for name, (m, n) in PROBES.items()}


def test_ship_changes_the_validated_buckets_and_nothing_else(run_copy: Path, tmp_path: Path) -> None:
    one, two, three = acf_candidates(run_copy)[:3]
    # one wins both shapes of bucket 0; two wins a only; three wins c (bucket 1)
    validate(run_copy, {one: {"a": 0.95, "b": 0.96}, two: {"a": 0.93}, three: {"c": 0.97}})
    out = tmp_path / "ship"
    shipped = ship_run(run_copy, out)
    assert [c.winner for c in shipped.choices] == [one, three] and shipped.changed == 2
    module = out / MODULE
    assert sorted(p.name for p in out.iterdir()) == sorted([MODULE, "acf", "acfs.json", "ship.json"])

    kernel, adapter = kernel_and_adapter(run_copy)
    old = answers(kernel, adapter, HEURISTIC)
    new = answers(kernel, adapter, module)
    results = RunDir(run_copy).results().set_index("candidate_id")
    for name, bucket_winner in (("a", one), ("b", one), ("narrower", one), ("c", three), ("mid", three)):
        acf = new[name].pop("advanced_controls_file")
        assert new[name] == old[name]  # an ACF-only winner keeps the config exactly
        assert acf == str(out / "acf" / f"{results.loc[bucket_winner, 'acf']}.acf") and Path(acf).is_file()
    assert new["widest"] == old["widest"]  # a bucket no campaign shape is in: the old answer, exactly
    helion = import_helion()
    for config in answers(kernel, adapter, module).values():
        helion.Config(**config)  # Helion takes every dict the shipped file returns

    # Helion's own lookup finds the shipped file first in HELION_HEURISTIC_DIR and keys its cache with the
    # very same key function (Helion's HeuristicKeyFunction, not ours)
    from helion.autotuner.aot_kernel import HeuristicKeyFunction

    os.environ["HELION_HEURISTIC_DIR"] = str(out)
    try:
        assert find_heuristic(kernel, 90) == module
        HeuristicKeyFunction.clear_cache()
        key = HeuristicKeyFunction(kernel.__code__.co_filename, "scale_rows")
        with answering_as(90):
            keys = {n: key(*adapter.aot.args(Shape(n, {"M": m, "N": k}), "meta")) for n, (m, k) in PROBES.items()}
    finally:
        del os.environ["HELION_HEURISTIC_DIR"]
        HeuristicKeyFunction.clear_cache()
    assert keys == {"a": 0, "b": 0, "c": 1, "narrower": 0, "mid": 1, "widest": 2}

    text = module.read_text()
    assert HEURISTIC.read_text().rstrip("\n") in text  # the previous heuristic, verbatim
    assert re.search(rf"# bucket 0 \(shapes: a, b\): CHANGED to candidate {one}, ACF acf/\w+\.acf", text)
    assert re.search(r"#   old config: \{'block_sizes': \[4\], 'num_warps': 4, 'num_stages': 1", text)
    assert re.search(r"#   a: 1\.05\dx \[1\.05\dx, 1\.05\dx\], noise floor 0\.\d+%, config 1\.00\dx, ACF 1\.05\dx, "
                     r"re-check 9/9 passed, bit-identical to its twin", text)
    assert "made for ptxas 13.3" in text and "sm_90 only" in text and "TRITON_PTXAS_PATH" in text
    assert "a bucket changes only if one candidate is a validated winner on every campaign shape in it" in text


def test_a_winner_on_some_shapes_of_a_bucket_changes_nothing(run_copy: Path, tmp_path: Path) -> None:
    one, two = acf_candidates(run_copy)[:2]
    validate(run_copy, {one: {"a": 0.95}, two: {"b": 0.95, "c": 1.01}})  # nobody wins a and b; c: slower
    shipped = ship_run(run_copy, tmp_path / "ship")
    assert shipped.changed == 0 and not (tmp_path / "ship" / "acf").exists()
    assert "no candidate is a validated winner on every shape of the bucket" in shipped.choices[0].reason
    kernel, adapter = kernel_and_adapter(run_copy)
    assert answers(kernel, adapter, tmp_path / "ship" / MODULE) == answers(kernel, adapter, HEURISTIC)


def test_a_failed_recheck_keeps_the_old_config(run_copy: Path, tmp_path: Path) -> None:
    one, two = acf_candidates(run_copy)[:2]
    validate(run_copy, {one: {"a": 0.95, "b": 0.95}, two: {"c": 0.95}}, fail={(one, "b")})
    shipped = ship_run(run_copy, tmp_path / "ship")
    assert [c.winner for c in shipped.choices] == [None, two]
    assert re.match(rf"candidate {one} won every shape but its re-check on b failed \(6/9 checks passed: seed "
                    r"\d+, inputs x1000: wrong answer", shipped.choices[0].reason)
    text = (tmp_path / "ship" / MODULE).read_text()
    assert f"# bucket 0 (shapes: a, b): unchanged: candidate {one} won every shape but its re-check" in text


def test_without_tritons_ptxas_the_shipped_file_answers_as_before(run_copy: Path, tmp_path: Path) -> None:
    one = acf_candidates(run_copy)[0]
    validate(run_copy, {one: {"a": 0.95, "b": 0.95, "c": 0.95}})
    ship_run(run_copy, tmp_path / "ship")
    kernel, adapter = kernel_and_adapter(run_copy)
    del os.environ["TRITON_PTXAS_PATH"]  # a user's process that runs Triton's bundled ptxas
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = answers(kernel, adapter, tmp_path / "ship" / MODULE)
    assert got == answers(kernel, adapter, HEURISTIC)
    assert any("TRITON_PTXAS_PATH is not set" in str(w.message) for w in caught)


def test_refusals_are_one_line_and_leave_nothing(run_copy: Path, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "ship"
    assert cli(["ship", str(run_copy), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not validated (no validation.csv)" in err
    one = acf_candidates(run_copy)[0]
    validate(run_copy, {one: {"a": 0.95}}, recheck=None)  # timings from elsewhere, no re-check
    with pytest.raises(UserError, match="never re-checked"):
        ship_run(run_copy, out)
    validate(run_copy, {one: {"a": 0.95}})
    (run_copy / "validation.csv").write_text((run_copy / "validation.csv").read_text() + "\n")
    with pytest.raises(UserError, match="belongs to another validation.csv"):
        ship_run(run_copy, out)
    validate(run_copy, {one: {"a": 0.95}})
    with pytest.raises(UserError, match="the path has a space"):
        ship_run(run_copy, tmp_path / "my ship")
    (out / "x").mkdir(parents=True)
    with pytest.raises(UserError, match="is not an empty folder"):
        ship_run(run_copy, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "ship"]  # no temporary folder left behind


def test_a_heuristic_without_a_key_function_buckets_by_its_answer(run_copy: Path, tmp_path: Path) -> None:
    """The heuristic beside the kernel has only ``autotune_scale_rows`` (Helion then keys by every shape feature):
    a bucket is then the set of shapes it gives one config, and the shipped file keeps having no key function."""
    campaign = run_copy / "campaign.yaml"
    text = "\n".join(line for line in campaign.read_text().splitlines() if "heuristic:" not in line)
    campaign.write_text(text)
    # a run of that campaign: run.json records its copy's hash (every reader checks the copy against it)
    meta = json.loads((run_copy / "run.json").read_text())
    (run_copy / "run.json").write_text(json.dumps({**meta, "campaign_sha256": text_sha256(text)}))
    one = acf_candidates(run_copy)[0]
    validate(run_copy, {one: {"a": 0.95, "b": 0.95}})
    shipped = ship_run(run_copy, tmp_path / "ship")
    assert [c.winner for c in shipped.choices] == [one, None]
    text = shipped.module.read_text()
    assert "def key_scale_rows" not in text and "this heuristic has no key function" in text
    kernel, adapter = kernel_and_adapter(run_copy)
    beside = Path(kernel.__code__.co_filename).with_name(MODULE)
    new, old = answers(kernel, adapter, shipped.module), answers(kernel, adapter, beside)
    for name in ("a", "b", "narrower"):  # every shape the old heuristic gave a's config gets the ACF
        assert new[name].pop("advanced_controls_file").endswith(".acf") and new[name] == old[name]
    assert all(new[n] == old[n] for n in ("c", "mid", "widest"))
