"""GPU evaluation end to end on a real GPU: failures are data, the campaign completes, validation works."""
from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from paretotune.cli import main as cli

pytestmark = pytest.mark.gpu
HERE = Path(__file__).resolve().parent


def _campaign(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "campaign.yaml"
    path.write_text(textwrap.dedent(body))
    return path


def test_wrong_answer_and_fault_are_failed_and_campaign_completes(tmp_path: Path) -> None:
    cfg = _campaign(tmp_path, f"""
        name: faulty
        kernel: {{source: "{HERE / 'faulty_kernels.py'}:faulty_scale"}}
        shapes: [{{name: n1m, N: 1048576}}]
        objectives: [runtime]
        acf: {{search_space: none}}
        search: {{engine: random, generations: 2, pool_size: 6}}
        evaluation: {{workers: 2, warmup_ms: 2, rep_ms: 5}}
    """)
    assert cli(["run", str(cfg), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    df = pd.read_json(tmp_path / "run" / "results.jsonl", lines=True)
    bug = df["config"].map(lambda c: __import__("json").loads(c)["BUG"])
    assert len(df) >= 7 and df["candidate_id"].is_unique  # baseline + search candidates, each once
    assert (df.loc[bug == 0, "status"] == "ok").all()
    wrong = df[bug == 1]
    assert not wrong.empty and (wrong["status"] == "failed").all()
    assert wrong["error"].str.contains("wrong answer").all()
    fault = df[bug == 2]
    assert not fault.empty and (fault["status"] == "failed").all()
    assert fault["error"].str.contains("illegal|CUDA|died", case=False, regex=True).all()
    assert (df.loc[df["status"] == "ok", "runtime"] > 0).all()


def test_ptxas_hang_is_a_timeout_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.environ["TRITON_PTXAS_PATH"]
    stand_in = tmp_path / "ptxas"
    stand_in.write_text(f"#!/bin/sh\ncase \"$*\" in *--apply-controls*) sleep 600;; esac\nexec {real} \"$@\"\n")
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PARETOTUNE_PTXAS", str(stand_in))
    cfg = _campaign(tmp_path, """
        name: hang
        kernel: {source: "paretotune.kernels.bundled.softmax:triton_softmax", space: {num_warps: [8, 16]}}
        shapes: [{name: s, M: 1024, N: 4096}]
        objectives: [runtime]
        search: {engine: compileiq, generations: 1, pool_size: 6}
        evaluation: {workers: 2, compile_timeout_s: 5, warmup_ms: 2, rep_ms: 5}
    """)
    assert cli(["run", str(cfg), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    df = pd.read_json(tmp_path / "run" / "results.jsonl", lines=True)
    assert df.loc[df["is_baseline"], "status"].eq("ok").all()
    acf_rows = df[df["acf"] != ""]
    assert len(acf_rows) == 6 and (acf_rows["status"] == "failed").all()
    assert acf_rows["error"].str.contains("timed out").all()


def test_runtime_campaign_then_validate(tmp_path: Path) -> None:
    cfg = _campaign(tmp_path, """
        name: softmax-runtime
        kernel: {source: "paretotune.kernels.bundled.softmax:triton_softmax"}
        shapes: [{name: a, M: 4096, N: 8192}, {name: b, M: 2048, N: 16384}]
        objectives: [runtime]
        search: {engine: compileiq, generations: 1, pool_size: 8}
        evaluation: {workers: 4, warmup_ms: 5, rep_ms: 20}
    """)
    run = tmp_path / "run"
    assert cli(["run", str(cfg), "--out", str(run), "--quiet"]) == 0
    df = pd.read_json(run / "results.jsonl", lines=True)
    ok = df[df["status"] == "ok"]
    assert {"runtime@a", "runtime@b"} <= set(df.columns) and len(ok) >= 2
    assert cli(["validate", str(run), "--top", "2", "--rounds", "12", "--rep-ms", "10"]) == 0
    verdicts = pd.read_csv(run / "validation.csv")
    control = verdicts[verdicts["role"] == "control"]
    assert len(control) == 2 and not control["significant"].any()  # baseline vs baseline: not significant
