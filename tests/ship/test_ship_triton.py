"""``paretotune ship`` for a Triton kernel: a launch-options table keyed like the kernel (the bundled softmax of
the CPU quickstart: no autotuner, so keyed by the shape's sizes) that imports, returns the validated winner's
launch options with ``ptx_options`` naming an ACF that exists, and the baseline's where nothing was validated."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from paretotune.ship.make import ship_run
from paretotune.ship.files import import_module
from paretotune.validate.worker import CONTROL_ID
from paretotune.validate.validation import validate_run
from paretotune.store import RunDir
from paretotune.toolchain.ptxas import export_for_triton, find_ptxas
from tests.report.conftest import run_quickstart


@pytest.fixture(scope="session")
def triton_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_quickstart(tmp_path_factory.mktemp("ship-triton") / "run", generations=1, pool_size=10)


def measure(faster: dict[int, float]) -> Any:
    def fake(run: RunDir, arms: list[dict[str, Any]], rounds: int, warmup_ms: float, rep_ms: float) -> dict:
        rng = np.random.default_rng(1)
        samples = {"baseline": list(rng.normal(0.2, 0.0002, rounds)),
                   str(CONTROL_ID): list(rng.normal(0.2, 0.0002, rounds))}
        for arm in arms:
            samples[str(arm["candidate_id"])] = list(rng.normal(0.2 * faster.get(arm["candidate_id"], 1.0), 0.0002,
                                                                rounds))
        return {"wide": {"samples": samples, "errors": {}}}
    return fake


def recheck(run: RunDir, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"checks": [{"candidate_id": j["candidate_id"], "shape": j["shape"], "run": 9, "passed": 9,
                        "bit_identical": True} for j in jobs]}


def validated_and_shipped(triton_run: Path, tmp_path: Path) -> tuple[Path, Any, int, Any]:
    """A copy of the run, its first ok ACF candidate validated as a 0.95x-time winner, and ``ship``'s result."""
    import shutil

    run = Path(shutil.copytree(triton_run, tmp_path / "run"))
    results = RunDir(run).results()
    cand = int(results[(results["status"] == "ok") & results["acf"].astype(bool)]["candidate_id"].iloc[0])
    validate_run(run, candidates=[cand], top=1, rounds=20, rep_ms=1, warmup_ms=1, alpha=0.01, min_effect=0.5,
                 measure=measure({cand: 0.95}), recheck=recheck)
    export_for_triton(find_ptxas())
    return run, results, cand, ship_run(run, tmp_path / "ship")


def test_a_triton_kernel_ships_a_launch_table(triton_run: Path, tmp_path: Path) -> None:
    run, results, cand, shipped = validated_and_shipped(triton_run, tmp_path)
    assert shipped.changed == 1 and shipped.module.name == "softmax_kernel_launch.py"
    table = import_module(shipped.module)
    assert table.KEY == ("M", "N", "dtype")
    got = table.launch_kwargs(4096, 16384, "float16")
    row = results.set_index("candidate_id").loc[cand]
    assert got["ptx_options"] == f"--apply-controls {tmp_path / 'ship' / 'acf' / (row['acf'] + '.acf')}"
    assert Path(got["ptx_options"].split(" ", 1)[1]).is_file()
    import json

    assert {k: v for k, v in got.items() if k != "ptx_options"} == json.loads(row["config"])
    assert table.PREVIOUS[(4096, 16384, "float16")] == {"num_warps": 4, "num_stages": 1}  # the spec's default
    assert table.launch_kwargs(1, 2, "float16") is None  # a key the campaign never measured
    text = shipped.module.read_text()
    assert "triton.Config carries no ptx_options" in text and "CHANGED to candidate" in text


def test_a_triton_ship_folder_applies_its_acf_under_exec(triton_run: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``ship`` also writes ``acfs.json``: the winner's PTX keyed to its ACF, so ``paretotune exec --acfs OUT``
    (here its context manager) gives the kernel, launched with the plain config and no ``ptx_options``, the
    machine code of the ACF build."""
    import json

    from paretotune import shipped_acfs
    from paretotune.ship.files import kernel_adapter, stored_request
    from paretotune.kernels.triton import split_config
    from paretotune.kernels.triton_jit import compile_like_jit
    from paretotune.ship.ptxas_shim import ptx_key
    from paretotune.ship.shipped_acfs import load_index
    from tests.toolchain.shipped_program import text_section

    run, results, cand, shipped = validated_and_shipped(triton_run, tmp_path)
    row = results.set_index("candidate_id").loc[cand]
    request = stored_request(RunDir(run))
    adapter = getattr(kernel_adapter(request), "inner", kernel_adapter(request))
    shape = next(s for s in request.shapes if s.label == "wide")
    config = json.loads(row["config"])
    entries = load_index(shipped.out)
    assert shipped.summary["exec_entries"] == len(entries) == 1
    assert entries[0]["ptx_sha256"] == ptx_key(adapter.compile_ptx(config, shape, request.target).ptx)
    assert entries[0]["acf"] == f"{row['acf']}.acf" and entries[0]["arch"] == "sm_90a"
    assert entries[0]["ptxas_version"] == find_ptxas().version and entries[0]["evidence"]["run_candidate"] == cand

    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    monkeypatch.setenv("PARETOTUNE_EXEC_CACHE", str(tmp_path / "exec-cache"))

    def machine_code(acf: Path | None) -> bytes:
        resolved = adapter._resolve(config, shape)
        launch, _ = split_config(resolved)
        if acf is not None:
            launch["ptx_options"] = f"--apply-controls {acf}"
        named = adapter.named_args(adapter.make_inputs(shape, "meta", 0), shape, resolved)
        compiled = compile_like_jit(adapter.parts.jit, [named[p.name] for p in adapter.parts.jit.params], launch,
                                    request.target)
        return text_section(compiled.asm["cubin"], compiled.name)

    with_acf = machine_code(shipped.out / "acf" / entries[0]["acf"])
    plain_build = machine_code(None)
    log = tmp_path / "decisions.jsonl"
    with shipped_acfs(shipped.out, log):
        got = machine_code(None)
    assert got == with_acf
    assert [json.loads(line)["acf"] for line in log.read_text().splitlines()] == [entries[0]["acf"]]
    assert machine_code(None) == plain_build  # after the block, plain builds again


def test_an_acf_that_adds_nothing_ships_its_config_alone(triton_run: Path, tmp_path: Path) -> None:
    """A winner whose ACF was not shown to help against its no-ACF twin, while that twin is a validated winner
    too: the table launches the winner's config with no ``ptx_options``, copies no ACF, and its header says why."""
    import json
    import shutil

    from paretotune.pareto.attribution import config_key

    run = Path(shutil.copytree(triton_run, tmp_path / "run"))
    results = RunDir(run).results()
    default = json.loads(results[results["is_baseline"].astype(bool)].iloc[0]["config"])
    moved = results[(results["status"] == "ok") & results["acf"].astype(bool)
                    & (results["config"].map(lambda c: config_key(json.loads(c))) != config_key(default))]
    cand = int(moved["candidate_id"].iloc[0])  # an ACF on a config other than the baseline's
    config = json.loads(moved["config"].iloc[0])

    def same_config(run_dir: RunDir, arms: list[dict[str, Any]], rounds: int, warmup_ms: float, rep_ms: float):  # type: ignore[no-untyped-def]
        faster = {a["candidate_id"]: 0.95 for a in arms if config_key(a["config"]) == config_key(config)}
        return measure(faster)(run_dir, arms, rounds, warmup_ms, rep_ms)

    validation = validate_run(run, candidates=[cand], top=1, rounds=20, rep_ms=1, warmup_ms=1, alpha=0.01,
                              min_effect=0.5, measure=same_config, recheck=recheck)
    row = validation.verdicts[validation.verdicts["candidate_id"] == cand].iloc[0]
    assert row["significant"] and not row["acf_significant"]
    export_for_triton(find_ptxas())
    shipped = ship_run(run, tmp_path / "ship")
    assert shipped.changed == 1 and shipped.acfs == [] and not (tmp_path / "ship" / "acf").exists()
    got = import_module(shipped.module).launch_kwargs(4096, 16384, "float16")
    assert got == config and "ptx_options" not in got
    assert "the candidate's ACF is left out: its ACF was not shown to help on wide" in shipped.module.read_text()
    assert "not shown to help" in shipped.summary["buckets"][0]["acf_left_out"]
