"""A Helion kernel's baseline is the config a plain call runs with, found as Helion 1.5 finds it
(``helion/autotuner/aot_cache.py``): the heuristic file named after the kernel's source file, older compute
capabilities as fallback, ``$HELION_HEURISTIC_DIR`` first, a user key's values flattened. Each case is checked
against Helion's own ``AOTAutotuneCache._get_heuristic_config``. On 74b6e06 paretotune looked for
``_helion_aot_<kernel name>_cuda_sm90.py`` only and passed the raw arguments, so the first three cases silently
got Helion's default config."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from paretotune.campaign.user_code import import_object
from paretotune.kernels.helion import HelionAdapter, spec_from_kernel
from paretotune.records import Shape
from paretotune.toolchain.arch import TARGETS

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "helion_native"
ROOT = Path(__file__).resolve().parents[2]
NARROW = Shape(label="narrow", params={"M": 256, "N": 1024})
WIDE = Shape(label="wide", params={"M": 256, "N": 4096})


def _adapter(source: str, shapes: tuple[Shape, ...] = (NARROW, WIDE)) -> HelionAdapter:
    kernel = import_object(source, FIX, "test")
    adapter = HelionAdapter(source.rpartition(":")[2], spec_from_kernel(kernel, import_object("rows_keyed.py:inputs",
                                                                                              FIX, "test")))
    adapter.use_campaign(shapes, TARGETS["sm_90"], False)
    return adapter


def _helions_own_pick(adapter: HelionAdapter, shape: Shape) -> dict[str, Any] | None:
    """What Helion's AOTAutotuneCache._get_heuristic_config returns for the shape's arguments (its lookup asked
    as an sm_90 device answers; no search is built: only the fields that method reads are set)."""
    from helion.autotuner.aot_cache import AOTAutotuneCache, get_aot_data_dir

    from paretotune.kernels.helion_heuristic import answering_as

    class Probe(AOTAutotuneCache):
        def __init__(self, bound: Any, args: Any) -> None:  # noqa: D107 - the fields the lookup reads
            self.kernel, self.args, self.data_dir = bound, args, get_aot_data_dir()

    args = adapter.spec.args(adapter.spec.inputs(shape.params, "cpu", 0), shape.params)
    AOTAutotuneCache._heuristic_results.clear()
    AOTAutotuneCache._heuristic_modules.clear()
    with answering_as(90):
        config = Probe(adapter.kernel.bind(args), args)._get_heuristic_config(args)
    return None if config is None else dict(config.config)


def _helions_default(adapter: HelionAdapter, shape: Shape) -> dict[str, Any]:
    from paretotune.kernels.helion_space import normalized

    spec = adapter.config_spec(shape)
    return normalized(spec, dict(spec.default_config().config))


def _pick(adapter: HelionAdapter, shape: Shape) -> dict[str, Any]:
    config = adapter.default_config(shape)
    return {k: config[k] for k in ("block_sizes", "num_warps", "num_stages")}


def test_user_keyed_heuristic_named_after_the_source_file() -> None:
    """``rows_keyed.py`` holds ``scale_keyed`` with ``key=(width, dtype)``: the file is found by the source file's
    name and called with (width, element size), as Helion calls it."""
    from paretotune.kernels.helion_heuristic import load

    adapter = _adapter("rows_keyed.py:scale_keyed")
    assert _pick(adapter, NARROW) == {"block_sizes": [8], "num_warps": 2, "num_stages": 1}
    assert _pick(adapter, WIDE) == {"block_sizes": [1], "num_warps": 16, "num_stages": 2}
    assert adapter.baseline_source == {"narrow": "AOT heuristic _helion_aot_rows_keyed_cuda_sm90.py (sm_90)",
                                       "wide": "AOT heuristic _helion_aot_rows_keyed_cuda_sm90.py (sm_90)"}
    assert load(FIX / "_helion_aot_rows_keyed_cuda_sm90.py").CALLS[-2:] == [(1024, 2), (4096, 2)]
    for shape in (NARROW, WIDE):
        assert _helions_own_pick(adapter, shape) == _pick(adapter, shape)


def test_an_sm80_heuristic_serves_sm90() -> None:
    adapter = _adapter("old_arch/rows_old.py:rows_old", (WIDE,))
    assert _pick(adapter, WIDE) == {"block_sizes": [4], "num_warps": 2, "num_stages": 1}
    assert adapter.baseline_source["wide"] == "AOT heuristic _helion_aot_rows_old_cuda_sm80.py (sm_90)"
    assert _helions_own_pick(adapter, WIDE) == _pick(adapter, WIDE)


def test_helion_heuristic_dir_comes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HELION_HEURISTIC_DIR", str(FIX / "override"))
    adapter = _adapter("rows_keyed.py:scale_keyed", (WIDE,))
    assert _pick(adapter, WIDE) == {"block_sizes": [2], "num_warps": 8, "num_stages": 1}
    assert _helions_own_pick(adapter, WIDE) == _pick(adapter, WIDE)


def test_an_aot_kernel_without_a_heuristic_says_its_baseline_is_helions_default(tmp_path: Path) -> None:
    """A copy of the kernel file in a folder without its heuristic: Helion would run its default config, and the
    baseline's source says so, naming the file it looked for."""
    (tmp_path / "rows_keyed.py").write_text((FIX / "rows_keyed.py").read_text())
    kernel = import_object("rows_keyed.py:scale_keyed", tmp_path, "test")
    adapter = HelionAdapter("scale_keyed", spec_from_kernel(kernel, import_object("rows_keyed.py:inputs", FIX, "t")))
    adapter.use_campaign((WIDE,), TARGETS["sm_90"], False)
    config = adapter.default_config(WIDE)
    assert config == _helions_default(adapter, WIDE)
    assert adapter.baseline_source["wide"] == ("Helion's default config (no AOT heuristic for sm_90: looked for "
                                               "_helion_aot_rows_keyed_cuda_sm90.py and older beside rows_keyed.py)")


def test_a_plain_kernel_ignores_a_heuristic_file_as_helion_does(tmp_path: Path) -> None:
    """Helion looks up heuristics for @helion.aot_kernel only: a plain @helion.kernel beside a file named like
    one keeps Helion's default config (a plain call of it would autotune)."""
    source = (FIX / "rows_keyed.py").read_text().replace("@helion.aot_kernel(key=width_key)",
                                                          "@helion.kernel(static_shapes=True)")
    (tmp_path / "rows_keyed.py").write_text(source)
    (tmp_path / "_helion_aot_rows_keyed_cuda_sm90.py").write_text(
        (FIX / "_helion_aot_rows_keyed_cuda_sm90.py").read_text())
    kernel = import_object("rows_keyed.py:scale_keyed", tmp_path, "test")
    adapter = HelionAdapter("scale_keyed", spec_from_kernel(kernel, import_object("rows_keyed.py:inputs", FIX, "t")))
    adapter.use_campaign((WIDE,), TARGETS["sm_90"], False)
    assert adapter.default_config(WIDE) == _helions_default(adapter, WIDE)
    assert adapter.baseline_source["wide"].startswith("Helion's default config (not an AOT kernel")


def _campaign(tmp_path: Path, source: str, shapes: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(f"""
        name: heuristic-case
        kernel: {{source: {FIX / source}, inputs: {FIX / 'rows_keyed.py'}:inputs}}
        shapes: {shapes}
        objectives: [registers]
        acf: {{search_space: ptxas-13.3}}
        search: {{strategy: acf-only, engine: compileiq, generations: 1, pool_size: 8}}
    """))
    return path


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "paretotune.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_a_heuristic_that_fails_is_a_one_line_error_naming_its_file(tmp_path: Path) -> None:
    """rows_broken's heuristic has no entry for 4096-wide rows: Helion would log it and run its default config;
    the campaign is refused in one line naming the file, and leaves no run folder."""
    campaign = _campaign(tmp_path, "broken/rows_broken.py:rows_broken", "[{name: wide, M: 256, N: 4096}]")
    done = _cli("run", str(campaign), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "_helion_aot_rows_broken_cuda_sm90.py" in lines[0] and "autotune_rows_broken failed (KeyError: 4096)" \
        in lines[0] and "shape wide" in lines[0]
    assert not (tmp_path / "run").exists()


def test_the_run_prints_where_each_baseline_came_from(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, "rows_keyed.py:scale_keyed",
                         "[{name: narrow, M: 256, N: 1024}, {name: wide, M: 256, N: 4096}]")
    done = _cli("run", str(campaign), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "baseline wide: AOT heuristic _helion_aot_rows_keyed_cuda_sm90.py (sm_90)" in done.stdout
    # an AOT kernel is built as shipped, without static shapes; the run says so for what it pins
    assert json.loads((tmp_path / "run" / "run.json").read_text())["kernel"]["static_shapes"] is False


def test_a_pinned_config_is_used_with_the_kernels_own_static_shapes() -> None:
    """The pin says to build the config with the kernel's own ``static_shapes``: Helion's AOT kernels ship with
    ``False``, and the same config under ``static_shapes=True`` generates other Triton code than was measured
    (the pin once said ``True`` for every kernel)."""
    import helion

    from paretotune.validate.validation import pin_snippet

    aot, plain = _adapter("rows_keyed.py:scale_keyed"), _adapter("rows_keyed.py:scale_keyed")
    plain._kernel = helion.kernel(aot.kernel.fn, static_shapes=True)
    assert aot.static_shapes is False and plain.static_shapes is True
    config = aot.default_config(WIDE)
    scope: dict[str, Any] = {"__file__": "/tmp/pin.py"}
    exec(compile(pin_snippet("rows_keyed.py:scale_keyed", config, None, {"wide": 1.02},  # noqa: S102 - the pin
                             static_shapes=aot.static_shapes), "pin.py", "exec"), scope)
    assert scope["STATIC_SHAPES"] is False
    pinned = helion.kernel(aot.kernel.fn, config=scope["CONFIG"], static_shapes=scope["STATIC_SHAPES"])
    args = aot.spec.args(aot.spec.inputs(WIDE.params, "meta", 0), WIDE.params)
    measured = aot.triton_source(config, WIDE)
    assert pinned.bind(args).to_triton_code(scope["CONFIG"]) == measured
    assert plain.triton_source(config, WIDE) != measured


def test_a_pin_from_a_run_that_did_not_record_static_shapes_says_so_rather_than_guess() -> None:
    """Runs older than run.json's ``kernel.static_shapes`` gave every pin ``True``, which is wrong for Helion's AOT
    kernels; such a pin now leaves the setting unset and says why."""
    from paretotune.validate.validation import pin_snippet

    config = _adapter("rows_keyed.py:scale_keyed").default_config(WIDE)
    text = pin_snippet("rows_keyed.py:scale_keyed", config, None, {"wide": 1.02}, static_shapes=None)
    scope: dict[str, Any] = {"__file__": "/tmp/pin.py"}
    exec(compile(text, "pin.py", "exec"), scope)  # noqa: S102 - the pin is Python to run
    assert scope["STATIC_SHAPES"] is None and "not recorded by this run" in text
    per_shape = pin_snippet("rows_keyed.py:scale_keyed", {}, None, {"wide": 1.02}, per_shape={"wide": config},
                            static_shapes=None)
    assert "STATIC_SHAPES = None  # not recorded by this run" in per_shape
