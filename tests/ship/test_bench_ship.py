"""The CPU-checkable parts of benchmarks/bench_ship.py (the H200 runs the rest): its campaigns load with the whole
sweep, its per-kernel figures follow from the per-shape ones, and (where the pretuned kernels are materialised)
each kernel copy resolves through Helion's own lookup to the heuristic beside it."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from paretotune.campaign.load import campaign_from_text

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_ship", ROOT / "benchmarks" / "bench_ship.py")
assert spec is not None and spec.loader is not None
bench = importlib.util.module_from_spec(spec)
sys.path.insert(0, str(ROOT / "benchmarks"))  # as `python benchmarks/bench_ship.py` has it, for its `import common`
try:
    spec.loader.exec_module(bench)
finally:
    sys.path.remove(str(ROOT / "benchmarks"))


@pytest.mark.parametrize("kernel", bench.KERNELS)
def test_each_campaign_is_acf_only_over_the_whole_sweep(kernel: str, tmp_path: Path) -> None:
    campaign = campaign_from_text(bench.campaign_text(kernel, tmp_path, 75, 16), tmp_path / "c.yaml")
    assert [s.label for s in campaign.shapes] == [s["name"] for s in bench.SWEEPS[kernel]]
    assert campaign.spec.search.strategy == "acf-only" and campaign.spec.search.wall_clock_s == 75
    assert len(campaign.shapes) <= 24


def test_worst_shape_within_its_noise_floor() -> None:
    shape = {"ci_low": 0.0, "ci_high": 2.0, "changed": False, "output_check": "ok"}
    record = {"shapes": {"a": {**shape, "speedup": 1.03, "noise_floor": 0.004, "changed": True},
                         "b": {**shape, "speedup": 0.997, "noise_floor": 0.004},
                         "c": {"error": "RuntimeError: boom"}}}
    out = bench.finish(record)
    assert out["worst_shape"] == "b" and out["worst_within_floor"] and out["never_slower"]
    assert out["shapes_timed"] == 2 and out["shapes_changed"] == 1
    assert out["geomean"] == pytest.approx((1.03 * 0.997) ** 0.5)
    record["shapes"]["b"]["speedup"] = 0.99  # slower than its floor allows
    assert not bench.finish(record)["never_slower"]


@pytest.mark.skipif(not (ROOT / ".workloads" / "helion-pretuned-sm90").is_dir(),
                    reason="the pretuned kernels are not materialised (.workloads/)")
def test_check_mode_resolves_each_copy_to_its_own_heuristic() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_ship.py"), "--check", "--kernels",
                           "vector_add,scaled_mm"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "vector_add: 10 shapes in 2 buckets; copies resolve to old/ and new/" in proc.stdout
    assert "scaled_mm: 24 shapes in 24 buckets" in proc.stdout
