"""Bringing your own Triton kernel: the docs' worked examples, an @triton.autotune kernel tuned unchanged,
config lists, the notebook-style API, and the one-line errors (bare kernel, no GPU)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from paretotune.records import Shape
from paretotune.search.space import SearchSpace, config_list_space

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"


def _cli(*args: str, cwd: Path = EXAMPLES) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "paretotune.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_vector_add_example_runs_from_its_campaign(tmp_path: Path) -> None:
    """docs/examples/vector_add.py (8 lines) + vector_add.yaml: a real static campaign on the CPU."""
    lines = [x for x in (EXAMPLES / "vector_add.py").read_text().splitlines() if x.strip()]
    assert len(lines) <= 8
    done = _cli("run", "vector_add.yaml", "--out", str(tmp_path / "run"), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # --json: the front document and nothing else on stdout
    assert doc["front_order"].startswith("ordered by knee pick") and doc["front"]
    assert doc["baseline"]["units"] == {"registers": "regs", "theoretical_occupancy": "%"}
    cell = doc["front"][0]["values"]["registers"]
    assert cell["gain"] == pytest.approx(doc["baseline"]["values"]["registers"] / cell["value"])
    results = pd.read_json(tmp_path / "run" / "results.jsonl", lines=True)
    search = results[~results["extra"].map(lambda e: "twin_of" in (e if isinstance(e, dict) else json.loads(e)))]
    assert (results["status"] == "ok").all() and len(search) == 9  # baseline + 8; no-ACF twins come after
    baseline = json.loads(results.loc[results["is_baseline"], "config"].iloc[0])
    assert baseline == {"BLOCK": 256, "num_warps": 2}  # each knob's first value
    text = _cli("front", str(tmp_path / "run")).stdout
    assert "registers [regs, gain]" in text and "ordered by knee pick" in text
    report = _cli("report", str(tmp_path / "run"), "--no-png", "--json")
    assert report.returncode == 0, report.stderr
    assert Path(json.loads(report.stdout)["report"]).is_file()


def test_autotuned_kernel_is_tuned_unchanged(tmp_path: Path) -> None:
    """The autotuner's configs are the searched list; its early_config_prune is honoured for the campaign's
    shapes (configs it drops on every shape are left out), and the baseline is the first config it keeps."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        import autotuned
    finally:
        sys.path.remove(str(EXAMPLES))
    import paretotune

    run = paretotune.run(EXAMPLES / "autotuned.yaml", out=tmp_path / "run")
    results = run.results
    listed = [{**c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages}
              for c in autotuned.rms_norm_kernel.configs]
    searched = [json.loads(c) for c in results.loc[~results["is_baseline"], "config"]]
    assert searched and all(c in listed for c in searched)
    ok = results[results["status"] == "ok"]
    assert all(json.loads(c).get("BLOCK", 4096) >= 2048 for c in ok.loc[~ok["is_baseline"], "config"])
    assert (results["status"] == "ok").all()  # configs pruned on every shape are not searched at all
    assert results.loc[results["is_baseline"], "status"].iloc[0] == "ok"
    adapter = _adapter(autotuned.rms_norm)
    assert adapter.default_config(Shape("r", {"rows": 8, "n_cols": 2048}))["BLOCK"] == 2048
    front = run.front()
    assert "gain:registers" in front.columns and not front.empty


def _adapter(spec: object) -> object:
    from paretotune.kernels.triton import TritonAdapter

    return TritonAdapter("k", spec)  # type: ignore[arg-type]


def test_config_list_is_one_knob_flattened_by_the_space() -> None:
    configs = [{"BLOCK": 64, "num_warps": 2}, {"BLOCK": 128, "num_warps": 4}]
    space = SearchSpace(knobs={**config_list_space(configs), "num_stages": [1, 2]})
    assert space.size == 4
    assert space.config({"config": configs[1], "num_stages": 2}) == {"BLOCK": 128, "num_warps": 4, "num_stages": 2}
    assert space.at_config({"BLOCK": 128, "num_warps": 4, "num_stages": 2}).fixed == {"config": configs[1],
                                                                                       "num_stages": 2}


def test_constraint_and_per_shape_default_compile_for_sm90() -> None:
    """A constrained product becomes a config list; a default that depends on the shape is resolved per shape
    and compiles (real Triton AOT compile for sm_90)."""
    import torch
    import triton

    from paretotune.kernels.triton import TritonKernel
    from paretotune.toolchain.arch import TARGETS

    sys.path.insert(0, str(EXAMPLES))
    try:
        from vector_add import add_kernel
    finally:
        sys.path.remove(str(EXAMPLES))
    spec = TritonKernel(add_kernel, inputs=lambda s: {"x": torch.randn(s["n"]), "y": torch.randn(s["n"]),
                                                      "out": torch.empty(s["n"])},
                        grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),),
                        space={"BLOCK": [256, 1024], "num_warps": [2, 4, 8]},
                        constraint=lambda c: c["BLOCK"] // (32 * c["num_warps"]) >= 4,
                        default=lambda shape: {"BLOCK": 1024 if shape["n"] > 4096 else 256, "num_warps": 2})
    adapter = _adapter(spec)
    listed = adapter.space()["config"]
    assert {"BLOCK": 256, "num_warps": 8} not in listed and {"BLOCK": 1024, "num_warps": 8} in listed
    assert len(listed) == 4
    small, big = Shape("s", {"n": 1000}), Shape("b", {"n": 1 << 20})
    assert adapter.default_config(big) == {"BLOCK": 1024, "num_warps": 2}
    assert adapter.default_config(small) == {"BLOCK": 256, "num_warps": 2}
    ptx = adapter.compile_ptx({}, small, TARGETS["sm_90"])  # {}: each shape at its own baseline config
    assert ptx.kernel_name == "add_kernel" and ptx.num_warps == 2 and ".visible .entry add_kernel" in ptx.ptx


def test_bare_jit_function_says_what_to_add(tmp_path: Path) -> None:
    campaign = tmp_path / "c.yaml"
    campaign.write_text(f"kernel: {{source: {EXAMPLES / 'vector_add.py'}:add_kernel}}\nshapes: [{{n: 1024}}]\n"
                        "objectives: [registers]\nsearch: {engine: random, generations: 1, pool_size: 6}\n")
    done = _cli("run", str(campaign), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 2
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and "bare Triton kernel" in err and "TritonKernel(add_kernel, inputs=" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.skipif(bool(os.environ.get("PARETOTUNE_ASSUME_GPU")), reason="told a GPU is there")
def test_runtime_objective_without_a_gpu_is_one_line_before_any_work(tmp_path: Path) -> None:
    from paretotune.measure.gpu_check import gpu_problem

    if gpu_problem() is None:
        pytest.skip("a CUDA GPU is visible")
    campaign = tmp_path / "c.yaml"
    campaign.write_text((EXAMPLES / "vector_add.yaml").read_text().replace("[registers, theoretical_occupancy]",
                                                                           "[runtime, registers]")
                        .replace("vector_add.py", str(EXAMPLES / "vector_add.py")))
    done = _cli("run", str(campaign), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 2 and not (tmp_path / "run").exists()
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and "objectives: runtime needs a CUDA GPU" in err
    # validate names a damaged run folder first (harden-runs), so it is given a real (static) run
    static = _cli("run", "vector_add.yaml", "--out", str(tmp_path / "static"), "--quiet")
    assert static.returncode == 0, static.stderr
    assert "outputs not checked: a static campaign builds every candidate but runs none" in static.stdout
    done = _cli("validate", str(tmp_path / "static"), cwd=tmp_path)
    assert done.returncode == 2 and "validate (it re-measures runtimes) needs a CUDA GPU" in done.stderr
    # not "use static objectives", which the run already does: what a static run is, and where to validate it
    assert "use static objectives" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert ("objectives (registers, theoretical_occupancy) are static: exact from the build, nothing to re-measure, "
            "and no kernel ran, so no output was checked; validate it on a GPU machine") in done.stderr


def test_the_api_prints_the_front_and_refuses_a_used_folder_in_its_own_words(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """paretotune.run prints what `paretotune run` prints (was: nothing unless quiet=False, undocumented); run
    twice into one folder is a UserError about out=, its traceback the call alone (was: a full traceback about
    --out, a flag the API has not got)."""
    import traceback

    import paretotune

    run = paretotune.run(EXAMPLES / "vector_add.yaml", out=tmp_path / "run")
    printed = capsys.readouterr().out
    assert "on the Pareto front" in printed and "outputs not checked" in printed and not run.results.empty
    with pytest.raises(paretotune.UserError) as caught:
        paretotune.run(EXAMPLES / "vector_add.yaml", out=tmp_path / "run")
    message = str(caught.value)
    assert message.startswith(f"out={str(tmp_path / 'run')!r}: already holds a run; pass another out=") and \
        "--out" not in message and "paretotune.open_run(" in message
    ours = [f for f in traceback.extract_tb(caught.value.__traceback__) if f"{os.sep}paretotune{os.sep}" in f.filename]
    assert [(Path(f.filename).name, f.name) for f in ours] == [("api.py", "run")]


NOTEBOOK = '''
import torch, triton, triton.language as tl
import paretotune

@triton.jit
def scale_kernel(x, out, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) * alpha, mask=offs < n)

kernel = paretotune.TritonKernel(scale_kernel, inputs=lambda s: {"x": torch.randn(s["n"]), "out": torch.empty(s["n"])},
                                 grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),),
                                 args=lambda t, shape, config: {"alpha": 2.0},
                                 space=[{"BLOCK": 512, "num_warps": 4}, triton.Config({"BLOCK": 2048}, num_warps=8)])
run = paretotune.run({"name": "cell", "kernel": {"source": kernel}, "shapes": [{"n": 65536}],
                      "objectives": ["registers", "theoretical_occupancy"],
                      "search": {"engine": "compileiq", "generations": 1, "pool_size": 8}}, out=OUT)
search = run.results[~run.results["extra"].str.contains("twin_of")]
print("RESULT", len(search), int((search["status"] == "ok").sum()), run.report(png=False).is_file(),
      "ordered by knee pick" in run.front_text(), "gain:registers" in run.front().columns)
'''


def _cell_via_stdin(code: str) -> str:
    """A program for ``python -`` that runs ``code`` the way IPython runs a cell: compiled under a cell name
    whose source only linecache holds (Triton reads a kernel's source from there), in ``__main__``, no file."""
    return textwrap.dedent(f"""
        import linecache
        CELL = {code!r}
        NAME = "<ipython-input-1-cell>"
        linecache.cache[NAME] = (len(CELL), None, CELL.splitlines(True), NAME)
        exec(compile(CELL, NAME, "exec"), globals())
    """)


@pytest.mark.parametrize("how", ["cell-via-stdin", "script-without-guard"])
def test_notebook_style_code_drives_a_campaign_in_one_process(tmp_path: Path, how: str) -> None:
    """A kernel defined inline where the campaign is run, with no __main__ guard: as a notebook cell (no file
    on disk: workers get the kernel pickled by value) and as a plain script (workers must not re-run it)."""
    code = f"OUT = {str(tmp_path / 'run')!r}\n" + textwrap.dedent(NOTEBOOK)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if how == "cell-via-stdin":
        command, stdin = [sys.executable, "-"], _cell_via_stdin(code)
    else:
        (tmp_path / "cell.py").write_text(code)
        command, stdin = [sys.executable, str(tmp_path / "cell.py")], None
    done = subprocess.run(command, input=stdin, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("RESULT") == 1  # the code ran once: no worker re-ran it
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT"))
    n, ok = (int(v) for v in line.split()[1:3])
    assert n == 9 and ok == 9 and line.split()[3:] == ["True", "True", "True"]  # report, front text, front()
    campaign = (tmp_path / "run" / "campaign.yaml").read_text()
    assert "paretotune.kernels.inline:scale_kernel_" in campaign


def test_kernels_guide_shows_the_files_ci_runs() -> None:
    """docs/kernels.md quotes the example files verbatim, so what it shows is what these tests run."""
    guide = (ROOT / "docs" / "kernels.md").read_text()
    for name in ("vector_add.py", "vector_add.yaml"):
        body = "\n".join(x for x in (EXAMPLES / name).read_text().splitlines() if not x.startswith("#"))
        assert body.strip() in guide, name
    assert "docs/kernels.md" in (ROOT / "README.md").read_text()


@pytest.mark.slow
def test_helion_example_runs_from_its_campaign(tmp_path: Path) -> None:
    done = _cli("run", "helion_add.yaml", "--out", str(tmp_path / "run"), "--quiet")
    assert done.returncode == 0, done.stderr
    results = pd.read_json(tmp_path / "run" / "results.jsonl", lines=True)
    results = results[~results["extra"].map(lambda e: "twin_of" in (e if isinstance(e, dict) else json.loads(e)))]
    assert len(results) == 9 and (results["status"] == "ok").sum() >= 8
    assert json.loads(results.loc[results["is_baseline"], "config"].iloc[0]) == {"block_sizes": [1024],
                                                                                 "num_warps": 4}


def test_validate_json_reads_as_speedup() -> None:
    """The verdicts JSON states the convention, and a faster candidate reads > 1 (real statistics code)."""
    import numpy as np

    from paretotune.commands.validate import verdicts_json
    from paretotune.pareto.stats import validate_front

    rng = np.random.default_rng(0)
    base = 1.0 + 0.01 * rng.standard_normal(30)
    table = validate_front(base, {7: 0.8 + 0.01 * rng.standard_normal(30)}, direction="min")
    doc = json.loads(verdicts_json(table, Path("run")))
    assert "> 1 is faster" in doc["convention"] and doc["unit"] == "ms"
    assert doc["verdicts"][0]["candidate_id"] == 7 and doc["verdicts"][0]["speedup"] == pytest.approx(1.25, rel=0.02)


def test_campaign_narrows_an_autotuned_kernels_config_list(tmp_path: Path) -> None:
    """kernel.space in the campaign filters the autotuner's configs by their keys; the baseline follows."""
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter

    campaign = tmp_path / "c.yaml"
    campaign.write_text(f"kernel:\n  source: {EXAMPLES / 'autotuned.py'}:rms_norm\n  space: {{num_warps: [8]}}\n"
                        "shapes: [{rows: 64, n_cols: 1024}]\nobjectives: [registers]\n"
                        "search: {engine: random, generations: 1, pool_size: 6}\n")
    adapter = make_adapter(load_campaign(campaign))
    listed = adapter.space()["config"]
    assert len(listed) == 3 and all(c["num_warps"] == 8 for c in listed)  # every BLOCK >= 1024 survives pruning
    campaign.write_text(campaign.read_text().replace("n_cols: 1024", "n_cols: 4096"))
    assert [c["BLOCK"] for c in make_adapter(load_campaign(campaign)).space()["config"]] == [4096]
    campaign.write_text(campaign.read_text().replace("num_warps: [8]", "num_warps: [3]"))
    from paretotune.errors import UserError

    with pytest.raises(UserError, match="no listed config"):
        make_adapter(load_campaign(campaign))


def test_progress_line_shows_the_best_speedup_per_shape() -> None:
    from paretotune.records import TrialRecord
    from paretotune.runner.progress_bar import BestSoFar
    from paretotune.store import ObjectiveColumn

    columns = [ObjectiveColumn(f"runtime@{s}", "min", "runtime", s) for s in ("a", "b")]
    columns.append(ObjectiveColumn("registers@a", "min", "registers", "a"))

    def rec(cid: int, a: float, b: float, base: bool = False) -> TrialRecord:
        return TrialRecord(cid, 0, {}, None, base, "ok", values={"runtime@a": a, "runtime@b": b, "registers@a": 9})

    best = BestSoFar(columns, [rec(0, 2.0, 1.0, base=True), rec(1, 1.0, 2.0)])
    best.add(rec(2, 4.0, 0.8))
    assert best.text() == " best speedup: runtime@a 2.000x, runtime@b 1.250x"


def test_progress_line_of_a_static_campaign_whose_first_objective_is_flat() -> None:
    """The quickstart: spill bytes are 0 for the baseline and every candidate (no ratio), yet the line shows the
    best registers and occupancy ratios (was: no "best" at all while the first objective did not move)."""
    from paretotune.records import TrialRecord
    from paretotune.runner.progress_bar import BestSoFar
    from paretotune.store import ObjectiveColumn

    columns = [ObjectiveColumn("spill_bytes", "min", "spill_bytes", "wide"),
               ObjectiveColumn("registers", "min", "registers", "wide"),
               ObjectiveColumn("theoretical_occupancy", "max", "theoretical_occupancy", "wide")]

    def rec(cid: int, registers: float, occupancy: float, base: bool = False) -> TrialRecord:
        return TrialRecord(cid, 0, {}, None, base, "ok", values={"spill_bytes": 0.0, "registers": registers,
                                                                 "theoretical_occupancy": occupancy})

    best = BestSoFar(columns, [rec(0, 167, 18.75, base=True), rec(1, 56, 50.0), rec(2, 30, 100.0)])
    assert best.text() == " best gain: registers 5.567x, theoretical_occupancy 5.333x"


def test_a_kernel_object_from_an_ended_session_is_a_one_line_error(tmp_path: Path) -> None:
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter
    from paretotune.errors import UserError

    campaign = tmp_path / "c.yaml"
    campaign.write_text("kernel: {source: 'paretotune.kernels.inline:gone_0123456789ab'}\nshapes: [{n: 1024}]\n"
                        "objectives: [registers]\nsearch: {engine: random, generations: 1, pool_size: 6}\n")
    with pytest.raises(UserError, match="no kernel object 'gone_0123456789ab' registered in this session"):
        make_adapter(load_campaign(campaign))
