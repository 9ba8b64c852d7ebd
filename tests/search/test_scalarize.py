"""The one number Helion's search ranks by, from paretotune's tuples (search/scalarize.py), and the campaign's
search.helion block."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from paretotune.search.scalarize import scalarize


def test_runtime_per_shape_is_one_over_the_geometric_mean_speedup() -> None:
    baseline = (20.0, 80.0)
    assert scalarize((10.0, 80.0), baseline) == pytest.approx(1 / math.sqrt(2.0))  # 2x on one shape, 1x on the other
    assert scalarize(baseline, baseline) == pytest.approx(1.0)
    assert scalarize(None, baseline) == math.inf  # a failure


def test_max_objectives_zero_columns_and_ranking() -> None:
    """A negated "max" column (occupancy) is better when more negative; a zero column (spill bytes) counts its
    difference, bounded; the number orders candidates as a person would."""
    baseline = (40.0, 0.0, -25.0)  # registers, spill bytes, -occupancy
    better_occupancy = scalarize((40.0, 0.0, -50.0), baseline)
    spills = scalarize((40.0, 64.0, -25.0), baseline)
    assert better_occupancy < 1.0 < spills
    assert math.isfinite(spills) and spills <= math.e ** (1 / 3) + 1e-9  # the zero column's term is at most 1
    assert scalarize((30.0, 0.0, -25.0), baseline) < 1.0
    assert scalarize((40.0, 0.0, -25.0), None) == pytest.approx(scalarize((40.0, 0.0, -25.0), (1.0, 1.0, 1.0)))


def test_search_helion_block_is_checked_at_load(tmp_path: Path) -> None:
    from paretotune.campaign.load import load_campaign
    from paretotune.errors import UserError
    from paretotune.search.helion_search import DEFAULTS as HELION_DEFAULTS

    def campaign(search: str) -> Path:
        path = tmp_path / "c.yaml"
        path.write_text("name: t\nkernel: {source: paretotune.kernels.bundled.softmax:triton_softmax}\n"
                        "shapes: [{name: s, M: 64, N: 64}]\nobjectives: [registers]\n"
                        f"acf: {{search_space: ptxas-13.3}}\nsearch: {search}\n")
        return path

    spec = load_campaign(campaign("{pool_size: 6}")).spec.search
    assert spec.engine == "auto" and spec.helion.model_dump() == HELION_DEFAULTS
    pattern = load_campaign(campaign("{engine: helion, helion: {algorithm: PatternSearch, islands: 1}}"))
    assert pattern.spec.search.helion.islands == 1
    with pytest.raises(UserError, match=r"search\.helion\.algorithm.*unknown Helion search algorithm 'Nope'"):
        load_campaign(campaign("{helion: {algorithm: Nope}}"))
    with pytest.raises(UserError, match=r"search\.helion\.islands"):
        load_campaign(campaign("{helion: {islands: 0}}"))
    with pytest.raises(UserError, match="engine helion searches kernel configs; strategy acf-only"):
        load_campaign(campaign("{engine: helion, strategy: acf-only}"))


def test_engine_helion_on_a_kernel_without_helions_configspec_fails_before_the_run(tmp_path: Path) -> None:
    """A Triton kernel (knob lists, no ConfigSpec): a one-line error from the checks before any run directory."""
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter
    from paretotune.errors import UserError
    from paretotune.runner.start import kernel_meta

    path = tmp_path / "c.yaml"
    path.write_text("name: t\nkernel: {source: paretotune.kernels.bundled.softmax:triton_softmax}\n"
                    "shapes: [{name: s, M: 64, N: 64}]\nobjectives: [registers]\nsearch: {engine: helion}\n")
    campaign = load_campaign(path)
    with pytest.raises(UserError, match=r"search\.engine: helion searches Helion's own ConfigSpec"):
        kernel_meta(campaign, make_adapter(campaign))
