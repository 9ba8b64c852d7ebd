"""Helion kernels without a hand-written space: Helion's ConfigSpec as the space, per-shape AOT-heuristic
baselines, the constraint applied where proposals are de-duplicated, the default reference (baseline output)."""
from __future__ import annotations

from pathlib import Path

import pytest

from paretotune.kernels.base import baseline_config
from paretotune.kernels.helion import HelionAdapter, HelionKernel, spec_from_kernel
from paretotune.records import Shape
from paretotune.toolchain.arch import TARGETS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "helion_aot"
SM90 = TARGETS["sm_90"]
NARROW = Shape(label="narrow", params={"M": 512, "N": 1024})
WIDE = Shape(label="wide", params={"M": 512, "N": 4096})


def _scale_rows_adapter(shapes: tuple[Shape, ...], gpu: bool = False, target: str = "sm_90") -> HelionAdapter:
    from paretotune.campaign.user_code import import_object

    kernel = import_object("scale_rows.py:scale_rows", FIXTURES, "test")
    factory = import_object("scale_rows.py:inputs", FIXTURES, "test")
    adapter = HelionAdapter("scale_rows", spec_from_kernel(kernel, factory))
    adapter.use_campaign(shapes, TARGETS[target], gpu)
    return adapter


def _bare(kind: str) -> HelionAdapter:
    from paretotune.campaign.user_code import import_object

    if kind == "scale_rows":
        return _scale_rows_adapter((WIDE,))
    from paretotune.kernels.bundled import helion_rms_norm, helion_softmax

    fn = {"softmax": helion_softmax.softmax, "rms_norm": helion_rms_norm.rms_norm}[kind]
    factory = import_object(f"bundled_fns.py:{kind}_args", FIXTURES, "test")
    adapter = HelionAdapter(kind, spec_from_kernel(fn, factory))
    adapter.use_campaign((Shape(label="s", params={"M": 256, "N": 2048, "dtype": "float16"}),), SM90, False)
    return adapter


@pytest.mark.parametrize("kind", ["softmax", "rms_norm", "scale_rows"])
def test_space_is_helions_configspec(kind: str) -> None:
    """Every key of Helion's default config is a knob; searched knobs hold the values Helion's autotuner draws
    (num_warps 1..32, power-of-two block sizes), and the baseline lies in the space and passes the constraint."""
    adapter = _bare(kind)
    shape = adapter._shapes[0]
    spec = adapter.config_spec(shape)
    space = adapter.space()
    assert set(dict(spec.default_config().config)) <= set(space)
    assert space["num_warps"] == [1, 2, 4, 8, 16, 32]
    assert len(space["block_sizes"]) > 4 and all(len(b) == 1 for b in space["block_sizes"])
    assert space["pid_type"][:1] == ["flat"] and len(space["pid_type"]) >= 2
    baseline = adapter.default_config(shape)
    assert all(baseline[k] in space[k] for k in baseline)
    accepts = adapter.constraint()
    assert accepts is not None and accepts(baseline)


def test_constraint_rejects_what_helion_rejects() -> None:
    """Combinations Helion's normalize rewrites are aliases of other points, not points: a loop option with no
    loop over the tiles (flat pid: one tile per program), a reduction loop as wide as the row (that is no loop)."""
    adapter = _scale_rows_adapter((NARROW,))
    accepts = adapter.constraint()
    base = adapter.default_config(NARROW)
    assert base["pid_type"] == "flat" and base["reduction_loops"] == [None] and accepts(base)
    assert [2] in adapter.space()["range_unroll_factors"] and not accepts({**base, "range_unroll_factors": [2]})
    assert not accepts({**base, "reduction_loops": [1024]})  # N is 1024
    # a persistent program loops over tiles: there the unroll factor is a real knob
    assert accepts({**base, "pid_type": "persistent_blocked", "range_unroll_factors": [2]})
    assert accepts({**base, "reduction_loops": [256]})


def test_tensor_descriptors_only_in_gpu_campaigns() -> None:
    """Static CPU campaigns leave TMA indexing out (and say so); GPU campaigns search it on sm_90."""
    cpu = _scale_rows_adapter((NARROW,), gpu=False)
    gpu = _scale_rows_adapter((NARROW,), gpu=True)
    cpu_values = {v for lst in cpu.space()["indexing"] for v in lst}
    gpu_values = {v for lst in gpu.space()["indexing"] for v in lst}
    assert cpu_values == {"pointer"} and cpu.space_note and "tensor_descriptor" in cpu.space_note
    assert "tensor_descriptor" in gpu_values and gpu.space_note is None
    with_td = {**gpu.default_config(NARROW), "indexing": ["tensor_descriptor"] * len(gpu.space()["indexing"][0])}
    assert gpu.constraint()(with_td)


def test_baseline_per_shape_from_the_heuristic_beside_the_kernel() -> None:
    adapter = _scale_rows_adapter((NARROW, WIDE))
    narrow, wide = adapter.default_config(NARROW), adapter.default_config(WIDE)
    assert (narrow["block_sizes"], narrow["num_warps"]) == ([4], 4)
    assert (wide["block_sizes"], wide["num_warps"]) == ([1], 8)
    assert adapter.baseline_source["narrow"] == "AOT heuristic _helion_aot_scale_rows_cuda_sm90.py (sm_90)"
    # the two shapes' baselines differ: the baseline candidate stands for "each shape at its own config"
    assert baseline_config(adapter, (NARROW, WIDE)) == {}
    assert adapter.compile_ptx({}, NARROW, SM90).num_warps == 4
    assert adapter.compile_ptx({}, WIDE, SM90).num_warps == 8
    # one shape: the baseline candidate's config is that shape's heuristic config, written out
    assert baseline_config(adapter, (WIDE,)) == wide


def test_multi_shape_space_is_the_intersection_plus_baselines() -> None:
    both = _scale_rows_adapter((NARROW, WIDE)).space()
    narrow = _scale_rows_adapter((NARROW,)).space()
    wide = _scale_rows_adapter((WIDE,)).space()
    for key, values in both.items():
        assert all(v in narrow[key] or v in wide[key] for v in values)
    assert [4] in both["block_sizes"] and [1] in both["block_sizes"]


def test_heuristic_named_in_the_campaign(tmp_path: Path) -> None:
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter

    text = f"""
kernel:
  source: {FIXTURES}/scale_rows.py:scale_rows
  inputs: {FIXTURES}/scale_rows.py:inputs
  heuristic: {FIXTURES}/other_heuristic_sm90.py
shapes: [{{name: narrow, M: 512, N: 1024}}]
objectives: [registers]
search: {{strategy: acf-only, generations: 1, pool_size: 6}}
"""
    campaign = campaign_from_text(text, tmp_path / "c.yaml")
    adapter = make_adapter(campaign)
    assert adapter.default_config(campaign.shapes[0])["num_warps"] == 2


def test_bad_inputs_factory_is_a_user_error(tmp_path: Path) -> None:
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter
    from paretotune.errors import UserError

    text = f"""
kernel:
  source: paretotune.kernels.bundled.softmax:triton_softmax
  inputs: {FIXTURES}/scale_rows.py:inputs
shapes: [{{M: 512, N: 1024}}]
objectives: [registers]
"""
    with pytest.raises(UserError, match="kernel.source: kernel.inputs is given, so the source must be a Helion"):
        make_adapter(campaign_from_text(text, tmp_path / "c.yaml"))


def test_acf_only_needs_an_acf_source(tmp_path: Path) -> None:
    from paretotune.campaign.load import campaign_from_text
    from paretotune.errors import UserError

    text = """
kernel: {source: paretotune.kernels.bundled.softmax:triton_softmax}
shapes: [{M: 512, N: 1024}]
objectives: [registers]
acf: {search_space: none}
search: {strategy: acf-only}
"""
    with pytest.raises(UserError, match="acf-only searches ACFs only"):
        campaign_from_text(text, tmp_path / "c.yaml")


def test_dedupe_never_hands_out_a_config_the_constraint_rejects() -> None:
    from paretotune.search.dedupe import Deduplicated
    from paretotune.search.random_engine import RandomEngine
    from paretotune.search.space import SearchSpace

    adapter = _scale_rows_adapter((NARROW,))
    accepts = adapter.constraint()
    space = SearchSpace(knobs=adapter.space(), constraint=accepts)
    engine = Deduplicated(RandomEngine(space, pool_size=16, seed=0), constraint=space.constraint)
    handed = []
    for _ in range(4):
        batch = engine.ask()
        handed += batch
        engine.tell({p.engine_id: (1.0,) for p in batch})
    assert handed and all(accepts(p.config) for p in handed)
    assert engine.rejected > 0  # Helion's space holds combinations it rejects: they were filtered, not built


def test_reference_is_optional() -> None:
    """A spec without a reference (and without a space or default) is valid: the baseline's output is the
    reference. Running it needs a GPU (test_default_reference_gpu)."""
    spec = HelionKernel(fn=lambda x: x, inputs=lambda s, d, seed: {}, args=lambda t, s: ())
    assert spec.reference is None and spec.space is None and spec.default is None


@pytest.mark.gpu
def test_default_reference_gpu() -> None:
    """On a GPU: with no reference, a candidate is checked against the baseline build on the same inputs."""
    from paretotune.measure.arms import check_candidate

    adapter = _scale_rows_adapter((WIDE,), gpu=True)
    base = adapter.default_config(WIDE)
    assert adapter.prepare(base, WIDE, None, adapter.make_inputs(WIDE, "cuda", 0)).reference is None
    assert check_candidate(adapter, {**base, "num_warps": 4, "block_sizes": [2]}, WIDE, None, "cuda", seed=3) is None
    assert check_candidate(adapter, {}, WIDE, None, "cuda", seed=3) is None  # the per-shape baseline marker


def test_pin_for_per_shape_baselines_names_each_shapes_config() -> None:
    """An acf-only winner over per-shape baselines (config ``{}``) is pinned as one Config per shape."""
    from paretotune.validate.validation import pin_snippet

    adapter = _scale_rows_adapter((NARROW, WIDE))
    per_shape = {s.label: adapter.default_config(s) for s in (NARROW, WIDE)}
    text = pin_snippet("scale_rows.py:scale_rows", {}, "cand3_x.acf", {"narrow": 1.02, "wide": 1.01},
                       per_shape=per_shape, baseline=adapter.baseline_source["wide"],
                       static_shapes=adapter.static_shapes)
    # the header names what the speedups are over: the heuristic's configs, not "the default build"
    assert text.startswith("# Pinned by paretotune: validated speedup vs the baseline, AOT heuristic "
                           "_helion_aot_scale_rows_cuda_sm90.py (sm_90), no ACF (narrow: 1.020x, wide: 1.010x).")
    scope: dict = {"__file__": "/tmp/pin.py"}
    exec(compile(text, "pin.py", "exec"), scope)  # noqa: S102 - the snippet is what a user runs
    configs = scope["CONFIGS"]
    assert set(configs) == {"narrow", "wide"}
    assert configs["narrow"].num_warps == 4 and configs["wide"].num_warps == 8
    assert configs["wide"].config["advanced_controls_file"].endswith("cand3_x.acf")
    assert scope["STATIC_SHAPES"] is adapter.kernel.settings.static_shapes is False  # an AOT kernel, as shipped


def test_fragments_helion_does_not_enumerate_get_a_seeded_sample() -> None:
    """Helion's search_values gives None for a wide integer range or a permutation (silu_mul_fp8's ConfigSpec
    has such a fragment; the H200 run of 2026-12-01 failed on it with a TypeError): they keep their default and
    a seeded sample of Helion's own random draws, the same on every call."""
    from helion.autotuner.config_fragment import IntegerFragment, PermutationFragment

    from paretotune.kernels.helion_space import MAX_VALUES, _fragment_values

    wide = IntegerFragment(1, 100_000, 7)
    assert wide.search_values(MAX_VALUES) is None
    values = _fragment_values(wide)
    assert values[0] == 7 and 1 < len(values) <= MAX_VALUES and len(set(values)) == len(values)
    assert all(1 <= v <= 100_000 for v in values) and values == _fragment_values(wide)
    perm = _fragment_values(PermutationFragment(4))
    assert perm[0] == [0, 1, 2, 3] and all(sorted(p) == [0, 1, 2, 3] for p in perm)


def test_campaign_narrows_helion_knobs_with_list_values(tmp_path: Path) -> None:
    """Helion's config values are whole lists (``block_sizes: [[2]]``, ``reduction_loops: [[null]]``):
    ``kernel.space`` takes them, so a campaign can hold knobs at given values (configs/pretuned's occupancy
    campaign holds every knob but num_warps at the heuristic's)."""
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter

    path = tmp_path / "c.yaml"
    path.write_text('name: narrowed\nkernel:\n  source: "paretotune.kernels.bundled.helion_softmax:helion_softmax"\n'
                    '  space: {block_sizes: [[2]], reduction_loops: [[null], [512]], num_warps: [8]}\n'
                    'shapes: [{name: s, M: 256, N: 512, dtype: float16}]\nobjectives: [registers]\ntarget: sm_90\n')
    space = make_adapter(load_campaign(path)).space()
    assert space["block_sizes"] == [[2]] and space["reduction_loops"] == [[None], [512]]
    assert space["num_warps"] == [8] and space["num_stages"] == [1, 2, 3]  # a knob not named keeps its values


@pytest.mark.parametrize(("target", "floor"), [("sm_90", 8), ("sm_80", 16)])
def test_the_block_size_floor_is_the_targets_on_a_cpu(target: str, floor: int) -> None:
    """Helion floors a grid's block size by the SM count (at most SMs x 64 blocks per axis): over 131,072 rows
    sm_90's 132 SMs give 131072 // 8448 = 15, so 8; sm_80's 108 give 18, so 16. Without a GPU Helion counts 128
    SMs (16 for both), so a CPU campaign searched another space than a GPU host would."""
    rows = Shape(label="rows", params={"M": 131072, "N": 64})
    adapter = _scale_rows_adapter((rows,), target=target)
    assert adapter.config_spec(rows).block_sizes[0].autotuner_min == floor
    assert [floor] in adapter.space()["block_sizes"]
