"""``validate --max-control-bias`` out of range: one line naming the flag, exit 2, the run untouched."""
from __future__ import annotations

from pathlib import Path

import pytest

from paretotune.cli import main
from store.test_damaged_runs import tree_digest


@pytest.mark.parametrize("value", ["1.5", "-0.01"])
def test_a_bias_bound_out_of_range_is_refused_before_anything_is_measured(
        small_real_run: Path, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_digest(small_real_run)
    code = main(["validate", str(small_real_run), "--max-control-bias", value])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("paretotune: error: --max-control-bias: must be in [0, 1)"), lines[0]
    assert tree_digest(small_real_run) == before
