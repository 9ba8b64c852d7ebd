"""``search.strategy: acf-only`` on a real static campaign: a Helion AOT kernel of the project's own with a
per-shape sm90 heuristic (tests/fixtures/helion_aot), two shapes with different baseline configs, real
Helion codegen, Triton AOT compiles, ptxas 13.3 builds of CompileIQ-sampled ACFs."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from paretotune.cli import main as cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "helion_aot"

CAMPAIGN = f"""
name: acf-only-scale-rows
kernel:
  source: {FIXTURES}/scale_rows.py:scale_rows
  inputs: {FIXTURES}/scale_rows.py:inputs
shapes:
  - {{name: narrow, M: 512, N: 1024}}
  - {{name: wide, M: 512, N: 4096}}
objectives: [registers, theoretical_occupancy]
acf: {{search_space: ptxas-13.3}}
search: {{engine: compileiq, strategy: acf-only, generations: 2, pool_size: 11}}
evaluation: {{workers: 2}}
"""


def test_acf_only_never_changes_the_config(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "campaign.yaml"
    cfg.write_text(CAMPAIGN)
    out = tmp_path / "run"
    assert cli(["run", str(cfg), "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "baseline narrow: AOT heuristic _helion_aot_scale_rows_cuda_sm90.py (sm_90)" in printed \
        and "strategy acf-only" in printed
    df = pd.read_json(out / "results.jsonl", lines=True)
    assert len(df) == 1 + 2 * 11 and (df["status"] == "ok").mean() >= 0.8
    # per-shape baselines differ, so every candidate's config is the marker for "each shape's own baseline"
    configs = [json.loads(c) if isinstance(c, str) else c for c in df["config"]]
    assert all(c == {} for c in configs)
    assert df["acf"].iloc[1:].str.len().gt(0).all() and df["acf"].iloc[1:].nunique() > 5
    meta = json.loads((out / "run.json").read_text())
    baselines = meta["kernel"]["baselines"]
    assert (baselines["narrow"]["num_warps"], baselines["wide"]["num_warps"]) == (4, 8)
    # and every build really ran each shape's heuristic config: 4 warps on narrow rows, 8 on wide ones
    ok = df[df["status"] == "ok"]
    extras = [json.loads(e) if isinstance(e, str) else e for e in ok["extra"]]
    assert all((e["narrow"]["num_warps"], e["wide"]["num_warps"]) == (4, 8) for e in extras)
