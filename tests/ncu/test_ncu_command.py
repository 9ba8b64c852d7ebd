"""The ncu command line for a batch."""
from __future__ import annotations

from pathlib import Path

import pytest

from paretotune.ncu.command import NcuOptions, build_command, import_command, nvtx_include_patterns

OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
L1 = "l1tex__throughput.avg.pct_of_peak_sustained_active"


def test_csv_command_shape() -> None:
    options = NcuOptions(metrics=("achieved_occupancy", L1, OCC))
    argv = build_command("/opt/ncu", options, ["pt_1_a", "pt_2_a"], ["python", "-m", "child", "spec.json"],
                         log_file=Path("/tmp/x/ncu.log"))
    assert argv == [
        "/opt/ncu", "--config-file", "off", "--target-processes", "all", "--nvtx",
        "--nvtx-include", "pt_1_a/", "--nvtx-include", "pt_2_a/",
        "--metrics", f"{OCC},{L1}",  # alias resolved, duplicates dropped, order kept
        "--clock-control", "none", "--cache-control", "all", "--replay-mode", "kernel",
        "--csv", "--page", "raw", "--print-units", "base",
        "--log-file", "/tmp/x/ncu.log",
        "python", "-m", "child", "spec.json",
    ]


def test_report_command_and_domain() -> None:
    options = NcuOptions(metrics=(OCC,), output="report", nvtx_domain="paretotune", launch_count=64,
                         extra_args=("--null-stdin",))
    argv = build_command("ncu", options, ["pt_1_a"], ["./child"], report_path=Path("/r/report"))
    assert argv[argv.index("--nvtx-include") + 1] == "paretotune@pt_1_a/"
    assert argv[argv.index("-o") - 1] == "-f" and argv[argv.index("-o") + 1] == "/r/report"
    assert "--csv" not in argv and "--page" not in argv
    assert argv[argv.index("--launch-count") + 1] == "64"
    assert argv[-2:] == ["--null-stdin", "./child"]


def test_patterns() -> None:
    assert nvtx_include_patterns(["pt_1_a", "pt_1_a", "pt_2_b"], None) == ["pt_1_a/", "pt_2_b/"]
    assert nvtx_include_patterns(["pt_1_a"], "dom") == ["dom@pt_1_a/"]
    assert nvtx_include_patterns(["pt_1_a"], "dom", "prefix") == ["regex:dom@pt_.*/"]
    assert nvtx_include_patterns(["pt_1_a"], None, "prefix") == ["regex:pt_.*/"]
    with pytest.raises(ValueError, match="NVTX range name"):
        nvtx_include_patterns(["cand:1"], None)


def test_option_validation() -> None:
    with pytest.raises(ValueError, match="metrics"):
        NcuOptions(metrics=())
    with pytest.raises(ValueError, match="nvtx_domain"):
        NcuOptions(metrics=(OCC,), nvtx_domain="my domain")
    with pytest.raises(ValueError, match="launch_count"):
        NcuOptions(metrics=(OCC,), launch_count=0)
    with pytest.raises(ValueError, match="report_path"):
        build_command("ncu", NcuOptions(metrics=(OCC,), output="report"), ["pt_1_a"], ["x"])
    with pytest.raises(ValueError, match="child"):
        build_command("ncu", NcuOptions(metrics=(OCC,)), ["pt_1_a"], [])


def test_clock_and_cache_overrides() -> None:
    argv = build_command("ncu", NcuOptions(metrics=(OCC,), clock_control="base", cache_control="none"),
                         ["pt_1_a"], ["x"])
    assert argv[argv.index("--clock-control") + 1] == "base"
    assert argv[argv.index("--cache-control") + 1] == "none"


def test_import_command() -> None:
    assert import_command("ncu", Path("r.ncu-rep")) == [
        "ncu", "--import", "r.ncu-rep", "--csv", "--page", "raw", "--print-units", "base"]
