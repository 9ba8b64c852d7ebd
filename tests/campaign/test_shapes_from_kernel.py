"""``shapes: from-kernel``: a pretuned kernel's campaign covers the whole sweep its own ``main()`` benchmarks."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from paretotune.campaign.load import campaign_from_text
from paretotune.errors import UserError
from paretotune.kernels import workloads
from paretotune.kernels.sweeps import SWEEPS

ROOT = Path(__file__).resolve().parents[2]
PRETUNED = ROOT / ".workloads" / "helion-pretuned-sm90"  # git-ignored (../shared/workloads/README.md)


def text(inputs: str) -> str:
    return (f"kernel: {{source: {PRETUNED}/rms_norm_per_block_quant/rms_norm_per_block_quant.py:"
            f"rms_norm_per_block_quant, inputs: {inputs}}}\nshapes: from-kernel\nobjectives: [runtime]\n"
            "search: {engine: random, strategy: acf-only}\n")


def test_from_kernel_is_the_main_sweep_with_every_shape_named(tmp_path: Path) -> None:
    campaign = campaign_from_text(text("paretotune.kernels.workloads:rms_norm_per_block_quant"), tmp_path / "c.yaml")
    labels = [s.label for s in campaign.shapes]
    assert len(labels) == 24 == len(set(labels))  # 3 hidden sizes x 8 token counts, as main() sweeps
    assert labels[0] == "tokens1_hidden2048_group_size128" and labels[-1] == "tokens4096_hidden5120_group_size128"
    # main() passes a scale upper bound and a residual: so does every shape of the campaign
    assert all(s.params["scale_ub"] is True and s.params["residual"] is True for s in campaign.shapes)
    assert campaign.spec.shapes[0].name == labels[0]  # the schema holds the expanded list (service limits see it)


def test_sweep_sizes_are_those_of_each_main() -> None:
    sizes = {k: len(v) for k, v in SWEEPS.items()}
    assert sizes == {"softmax": 100, "layer_norm": 38, "rms_norm": 30, "vector_add": 10, "cross_entropy": 21,
                     "silu_mul_fp8": 36, "dynamic_per_token_scaled_fp8_quant": 24,
                     "rms_norm_dynamic_per_token_quant": 36, "rms_norm_per_block_quant": 24, "scaled_mm": 24}


@pytest.mark.parametrize("inputs", ["paretotune.kernels.workloads:nope", "my_inputs.py:rms_norm", None])
def test_from_kernel_without_a_pretuned_factory_is_one_line(tmp_path: Path, inputs: str | None) -> None:
    body = text(inputs) if inputs else text("x:y").replace(", inputs: x:y", "")
    with pytest.raises(UserError) as err:
        campaign_from_text(body, tmp_path / "c.yaml")
    message = str(err.value)
    assert "\n" not in message and "shapes: from-kernel takes the sweep of a pretuned kernel" in message
    assert "paretotune.kernels.workloads:<name>" in message


def test_every_sweep_shape_is_one_its_factory_makes() -> None:
    """Each shape's keys are exactly what the kernel's input factory reads (the campaign's shape check would
    refuse any other key); meta tensors, so nothing is allocated."""
    from paretotune.kernels.base import check_shape_keys

    for name, shapes in SWEEPS.items():
        factory = getattr(workloads, name)
        for shape in shapes:
            params = {k: v for k, v in shape.items() if k != "name"}
            check_shape_keys(params, lambda p, f=factory: f(p, "meta", 0))


def test_per_block_quant_passes_scale_ub_and_residual_when_asked() -> None:
    shape = {"tokens": 8, "hidden": 256, "group_size": 128}
    plain = workloads.rms_norm_per_block_quant(shape, "cpu", 0)
    assert plain[5] is None and plain[6] is None
    args = workloads.rms_norm_per_block_quant({**shape, "scale_ub": True, "residual": True}, "cpu", 0)
    assert args[5].dim() == 0 and float(args[5]) == pytest.approx(float(args[1].float().mean()))
    assert args[6].shape == (8, 256) and args[6].dtype == torch.bfloat16 and not torch.equal(args[6], args[1])
    meta = workloads.rms_norm_per_block_quant({**shape, "scale_ub": True, "residual": True}, "meta", 0)
    assert meta[5].device.type == "meta" and meta[6].device.type == "meta"


@pytest.mark.skipif(not PRETUNED.is_dir(), reason="the pretuned kernels are not materialised (.workloads/)")
@pytest.mark.parametrize("name,order", [("silu_mul_fp8", ("tokens", "intermediate")),
                                        ("dynamic_per_token_scaled_fp8_quant", ("tokens", "hidden")),
                                        ("rms_norm_dynamic_per_token_quant", ("hidden", "tokens")),
                                        ("rms_norm_per_block_quant", ("hidden", "group_size", "tokens"))])
def test_the_sweep_is_the_kernels_own_bench_shapes(name: str, order: tuple[str, ...]) -> None:
    """Where the kernel's source has a ``_bench_shapes()`` (what its main() runs), the sweep is that list."""
    from paretotune.kernels.helion import import_helion

    import_helion()
    path = PRETUNED / name / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"pretuned_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    theirs = [tuple(s) for s in module._bench_shapes()]
    assert [tuple(s[k] for k in order) for s in SWEEPS[name]] == theirs
