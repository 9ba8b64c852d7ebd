"""``ship`` for a Helion run writes ``acfs.json`` too, and ``exec`` brings a Helion kernel its shipped ACF both
ways a program can build it: from a config written in its source (the PTX key, as for Triton) and from the
shipped AOT heuristic (``HELION_HEURISTIC_DIR`` set to the folder; the config names the ACF)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paretotune import shipped_acfs
from paretotune.ship.make import ship_run
from paretotune.ship.ptxas_shim import ptx_key
from paretotune.ship.shipped_acfs import load_index, read_log, shipped_environment
from paretotune.store import RunDir
from paretotune.toolchain.ptxas import export_for_triton, find_ptxas
from tests.ship.conftest import acf_candidates, validate
from tests.ship.test_ship_helion import MODULE, kernel_and_adapter


@pytest.fixture(autouse=True)
def _ptxas(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    export_for_triton(find_ptxas())
    monkeypatch.delenv("HELION_HEURISTIC_DIR", raising=False)
    monkeypatch.setenv("PARETOTUNE_EXEC_CACHE", str(tmp_path / "exec-cache"))


def shipped_winners(run: Path, tmp_path: Path) -> tuple[Any, dict[str, tuple[dict[str, Any], str]]]:
    """Ship with one winner for bucket 0 (shapes a, b) and one for bucket 1 (c); shape -> (new config, ACF)."""
    one, three = acf_candidates(run)[:2]
    validate(run, {one: {"a": 0.95, "b": 0.96}, three: {"c": 0.97}})
    shipped = ship_run(run, tmp_path / "ship")
    per_shape = {s: (b["new"], b["acf"]) for b in shipped.summary["buckets"] if b["winner"] is not None
                 for s in b["shapes"]}
    assert sorted(per_shape) == ["a", "b", "c"]
    return shipped, per_shape


def stored(run: Path) -> Any:
    from paretotune.ship.files import stored_request

    return stored_request(RunDir(run))


def test_a_helion_ship_keys_each_winners_build_to_its_acf(run_copy: Path, tmp_path: Path) -> None:
    shipped, per_shape = shipped_winners(run_copy, tmp_path)
    _, adapter = kernel_and_adapter(run_copy)
    campaign = stored(run_copy)
    shapes = {s.label: s for s in campaign.shapes}
    want = {ptx_key(adapter.compile_ptx(config, shapes[label], campaign.target).ptx): acf
            for label, (config, acf) in per_shape.items()}
    entries = load_index(shipped.out)
    assert {e["ptx_sha256"]: e["acf"] for e in entries} == want
    assert shipped.summary["exec_entries"] == len(entries) == len(want)
    assert all(e["arch"] == "sm_90a" and e["ptxas_version"] == find_ptxas().version for e in entries)
    assert {e["evidence"]["shape"] for e in entries} <= {"a", "b", "c"}
    assert all((shipped.out / "acf" / e["acf"]).is_file() for e in entries)


def test_exec_applies_a_helion_kernels_acf_from_its_source_config_and_from_the_heuristic(
        run_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped, per_shape = shipped_winners(run_copy, tmp_path)
    _, adapter = kernel_and_adapter(run_copy)
    campaign = stored(run_copy)
    shape = next(s for s in campaign.shapes if s.label == "c")
    config, acf = per_shape["c"]
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    log = tmp_path / "decisions.jsonl"
    with shipped_acfs(shipped.out, log):
        assert os.environ["HELION_HEURISTIC_DIR"] == str(shipped.out.resolve())
        adapter.compile_ptx(config, shape, campaign.target)  # the config as a program's source names it
        adapter.precompile(config, shape, shipped.out / "acf" / acf, campaign.target)  # as the heuristic gives it
        adapter.compile_ptx({**config, "num_warps": 2 * config.get("num_warps", 4)}, shape, campaign.target)
    assert "HELION_HEURISTIC_DIR" not in os.environ
    got = [(d["acf"], d["reason"]) for d in read_log(log)]
    assert got == [(acf, "applied"), (acf, "applied by the shipped heuristic's config"),
                   (None, "no entry for this PTX")]


def test_exec_puts_the_shipped_heuristic_first_unless_the_program_chose_its_own(
        run_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped, _ = shipped_winners(run_copy, tmp_path)
    probe = [sys.executable, "-c", "import os; print(os.environ.get('HELION_HEURISTIC_DIR'))"]
    done = subprocess.run([sys.executable, "-m", "paretotune", "exec", "--acfs", str(shipped.out), "--verbose",
                           "--", *probe], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(shipped.out.resolve())
    assert f"Helion heuristics from the shipped folder first: {MODULE}" in done.stderr

    monkeypatch.setenv("HELION_HEURISTIC_DIR", str(tmp_path / "theirs"))
    env = shipped_environment(shipped.out)
    assert "HELION_HEURISTIC_DIR" not in env.env and env.helion_dir_kept == str(tmp_path / "theirs")
    done = subprocess.run([sys.executable, "-m", "paretotune", "exec", "--acfs", str(shipped.out), "--", *probe],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.stdout.strip() == str(tmp_path / "theirs")
    assert done.stderr.strip().splitlines() == [
        f"paretotune exec: HELION_HEURISTIC_DIR={tmp_path / 'theirs'} was already set and is kept: the shipped "
        f"Helion heuristics ({MODULE}) were not used"]
    assert json.loads((shipped.out / "ship.json").read_text())["exec_entries"] == shipped.summary["exec_entries"]
