"""Classifying ncu runs from real recorded outputs (tests/fixtures/ncu), not from the exit code alone."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from paretotune.errors import UserError
from paretotune.ncu.errors import (
    NcuMetricError,
    NcuPermissionError,
    NcuSetupError,
    diagnose,
    missing_ranges_message,
    raise_if_fatal,
)
from paretotune.ncu.protocol import format_marker

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ncu"


def recorded(name: str) -> tuple[str, int | None]:
    """The output of a fixture and the exit code its header recorded (None where unknown)."""
    text = (FIXTURES / name).read_text()
    match = re.search(r"^# rc=(-?\d+)", text, re.MULTILINE)
    return text, int(match.group(1)) if match else None


@pytest.mark.parametrize("name", ["raw_csv_base_nvtx_triton.txt", "raw_csv_domain_pushpop.txt",
                                  "range_replay_domain_csv.txt", "raw_csv_default_triton_8kernels.txt"])
def test_successful_runs_are_ok(name: str) -> None:
    text, rc = recorded(name)
    assert rc == 0
    assert diagnose(text, rc).kind == "ok"


@pytest.mark.parametrize("name", ["err_nvgpuctrperm_deepgemm46.txt", "err_nvgpuctrperm_trtllm183.txt"])
@pytest.mark.parametrize("rc", [0, 1, None])
def test_permission_is_fatal_with_the_fix(name: str, rc: int | None) -> None:
    text, _ = recorded(name)
    diagnosis = diagnose(text, rc)
    assert diagnosis.kind == "permission" and diagnosis.fatal
    with pytest.raises(NcuPermissionError) as info:
        raise_if_fatal(diagnosis)
    message = str(info.value)
    assert "\n" not in message
    assert "NVreg_RestrictProfilingToAdminUsers=0" in message and "ERR_NVGPUCTRPERM" in message
    assert isinstance(info.value, UserError)


def test_no_kernels_with_exit_code_zero_is_not_ok() -> None:
    text, rc = recorded("no_kernels_matched.txt")
    assert rc == 0
    diagnosis = diagnose(text, rc)
    assert diagnosis.kind == "no_kernels" and not diagnosis.fatal and not diagnosis.retryable


def test_nvtx_no_match_carries_the_push_pop_hint() -> None:
    text, rc = recorded("nvtx_nomatch_warning.txt")
    assert rc == 0
    diagnosis = diagnose(text, rc)
    assert diagnosis.kind == "no_kernels"
    assert "match only push/pop ranges" in diagnosis.message
    message = missing_ranges_message(["pt_1_a", "pt_2_a"], diagnosis)
    assert message.startswith("no kernel was profiled in NVTX range(s) pt_1_a, pt_2_a")
    assert "push/pop" in message and "\n" not in message
    many = missing_ranges_message([f"pt_{i}_a" for i in range(20)], diagnosis)
    assert "and 12 more" in many


def test_child_process_hint() -> None:
    text, rc = recorded("child_process_application_only.txt")
    diagnosis = diagnose(text, rc)
    assert diagnosis.kind == "no_kernels"
    assert "--target-processes all" in diagnosis.message


def test_app_exit_code_is_retryable_and_uses_the_app_code() -> None:
    text, rc = recorded("app_exit_code.txt")
    assert rc == 3
    diagnosis = diagnose(text, rc)
    assert diagnosis.kind == "app_exit" and diagnosis.retryable and diagnosis.exit_code == 3
    assert "exited with code 3" in diagnosis.message


def test_app_exit_names_the_child_exception() -> None:
    text, rc = recorded("app_exit_code.txt")
    child = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n    f()\n"
             "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    diagnosis = diagnose(text + child, rc)
    assert diagnosis.message.endswith("RuntimeError: CUDA error: an illegal memory access was encountered")


def test_invalid_metric_text_page_and_failed_to_find() -> None:
    text, rc = recorded("invalid_metric.txt")
    assert rc == 0  # ncu profiles on and exits 0: the runner checks the cells (tests in test_ncu_runner)
    assert diagnose(text, rc).kind == "ok"
    diagnosis = diagnose("==ERROR== Failed to find metric foo__bar.sum\n", 1)
    assert diagnosis.kind == "invalid_metric"
    with pytest.raises(NcuMetricError):
        raise_if_fatal(diagnosis)


def test_timeout_and_crash() -> None:
    assert diagnose("==PROF== Connected to process 1 (python)\n", None, timed_out=True).kind == "timeout"
    lost = "==PROF== Connected to process 1 (python)\n==ERROR== Connection error detected communicating " \
           "with target application.\n"
    crash = diagnose(lost, 1)
    assert crash.kind == "crash" and crash.retryable
    assert diagnose(lost, 0).kind == "ok"  # exit 0: the runner judges by the rows it got
    assert "Connection error" in missing_ranges_message(["pt_1_a"], diagnose(lost, 0))
    assert diagnose("==PROF== Connected to process 1 (python)\n", -11).kind == "crash"


def test_profiler_busy_and_ncu_errors_are_fatal() -> None:
    busy = diagnose("==ERROR== Profiling failed because a driver resource was unavailable.\n", 1)
    assert busy.kind == "profiler_busy" and "dcgmi profile --pause" in busy.message
    bad_option = diagnose("==ERROR== unrecognised option '--nvtx-inclde'. Use --help for further details.\n", 1)
    assert bad_option.kind == "ncu_error" and "unrecognised option" in bad_option.message
    for diagnosis in (busy, bad_option):
        with pytest.raises(NcuSetupError):
            raise_if_fatal(diagnosis)


def test_child_fatal_marker() -> None:
    text = format_marker("fatal", "-", "spec.json: ValueError: spec version 9 (expected 1)") + "\n"
    diagnosis = diagnose(text + "==ERROR== The application returned an error code (2).\n", 2)
    assert diagnosis.kind == "child_fatal"
    with pytest.raises(NcuSetupError, match="spec version 9"):
        raise_if_fatal(diagnosis)
