"""What went wrong in one ncu run, read from its output rather than its exit code.

ncu exits 0 when nothing matched a filter and when a metric is unknown, and exits with the *application's*
code when the child fails, so :func:`diagnose` reads the tool's ``==ERROR==``/``==WARNING==`` lines (strings
verified on ncu 2025.3.1, see tests/fixtures/ncu/) and the child's marker lines.

Two kinds of outcome:

- *fatal* (setup) errors stop the whole evaluation with a one-line :class:`~paretotune.errors.UserError`:
  no ncu, no counter permission, unknown metric, profiler busy, ncu rejecting its own command line;
- *per-batch* failures (the child crashed, exited non-zero, timed out) are retried by splitting the batch,
  and what stays failed becomes data on the item.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from paretotune.errors import ToolchainError, UserError
from paretotune.ncu.protocol import parse_markers

FailureKind = Literal[
    "ok", "no_kernels", "app_exit", "crash", "timeout",  # per batch
    "permission", "invalid_metric", "profiler_busy", "ncu_error", "child_fatal",  # fatal
]
FATAL_KINDS: frozenset[str] = frozenset({"permission", "invalid_metric", "profiler_busy", "ncu_error", "child_fatal"})
RETRYABLE_KINDS: frozenset[str] = frozenset({"app_exit", "crash", "timeout"})

PERMISSION_FIX = ("ncu cannot read GPU performance counters (ERR_NVGPUCTRPERM): run as root, or set "
                  "'options nvidia NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d and reboot "
                  "(containers also need --cap-add=SYS_ADMIN); see https://developer.nvidia.com/ERR_NVGPUCTRPERM")

_APP_EXIT = re.compile(r"==ERROR== The application returned an error code \((-?\d+)\)")
_TOOL_LINE = re.compile(r"^==(PROF|WARNING|ERROR)== ?(.*)$")
_BUSY = ("driver resource was unavailable", "Failed to initialize the profiler", "lock file")
_CRASH = ("Connection error detected", "Failed to connect")


class NcuNotFoundError(ToolchainError):
    """No usable ncu binary."""


class NcuPermissionError(UserError):
    """The user may not read GPU performance counters."""


class NcuMetricError(UserError):
    """A metric name ncu does not know (or that no result had a value for)."""


class NcuSetupError(UserError):
    """ncu or the child cannot work at all (profiler busy, bad ncu option, child setup failed)."""


@dataclass(frozen=True)
class Diagnosis:
    """The classified outcome of one ncu run; ``message`` is one line."""

    kind: FailureKind
    message: str = ""
    exit_code: int | None = None
    warnings: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def fatal(self) -> bool:
        return self.kind in FATAL_KINDS

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS


def tool_lines(text: str, level: str) -> tuple[str, ...]:
    """The messages of ``==LEVEL==`` lines (``PROF``, ``WARNING`` or ``ERROR``), prefix stripped."""
    out = []
    for line in text.splitlines():
        match = _TOOL_LINE.match(line.strip())
        if match and match.group(1) == level:
            out.append(match.group(2).strip())
    return tuple(out)


def diagnose(text: str, returncode: int | None, *, timed_out: bool = False) -> Diagnosis:
    """Classify one run from everything it printed (ncu log + stdout + stderr) and its exit code."""
    warnings, errors = tool_lines(text, "WARNING"), tool_lines(text, "ERROR")
    joined = "\n".join(errors)

    def make(kind: FailureKind, message: str, code: int | None = returncode) -> Diagnosis:
        return Diagnosis(kind, message, code, warnings, errors)

    if "ERR_NVGPUCTRPERM" in text:
        return make("permission", PERMISSION_FIX)
    fatal = [m for m in parse_markers(text) if m.event == "fatal"]
    if fatal:
        return make("child_fatal", f"the ncu child program cannot run: {fatal[0].message}")
    if busy := next((e for e in errors if any(s in e for s in _BUSY)), None):
        return make("profiler_busy", f"ncu cannot profile: {busy} (another profiler such as DCGM may hold the "
                                     f"counters: 'dcgmi profile --pause'; under gVisor ncu cannot work)")
    if "Failed to find metric" in joined:
        line = next(e for e in errors if "Failed to find metric" in e)
        return make("invalid_metric", f"ncu: {line}; check the name with `ncu --query-metrics`")
    if timed_out:
        return make("timeout", "the batch timed out (a hang under kernel replay, or the timeout is too short)", None)
    if app := _APP_EXIT.search(text):
        code = int(app.group(1))
        return make("app_exit", f"the measured program exited with code {code}{_last_child_error(text)}", code)
    if returncode not in (0, None):
        crash = next((e for e in errors if any(s in e for s in _CRASH)), None)
        if crash or tool_lines(text, "PROF"):  # ncu had started the program
            return make("crash", f"the measured program crashed ({crash or f'exit code {returncode}'})"
                                 f"{_last_child_error(text)}")
        detail = errors[0] if errors else _last_line(text) or "no output"
        return make("ncu_error", f"ncu failed before profiling (exit code {returncode}): {detail}")
    if any("No kernels were profiled" in w for w in warnings):
        return make("no_kernels", no_kernels_message(warnings))
    return make("ok", "")


def no_kernels_message(warnings: tuple[str, ...]) -> str:
    """ncu's 'No kernels were profiled' plus its hint (NVTX filters match push/pop only, child processes)."""
    hints = [w for w in warnings if "No kernels were profiled" not in w and not w.startswith("Refer ")]
    return "ncu profiled no kernel" + (f" ({'; '.join(hints)})" if hints else "")


def missing_ranges_message(missing: list[str], diagnosis: Diagnosis) -> str:
    """One line naming the ranges that produced no result (long lists are shortened)."""
    shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
    base = f"no kernel was profiled in NVTX range(s) {shown}"
    if diagnosis.kind == "no_kernels":
        base = f"{base}: {diagnosis.message}"
    if diagnosis.errors:  # e.g. a connection error that did not change the exit code
        base = f"{base}; ncu: {diagnosis.errors[0]}"
    return base


def _last_child_error(text: str) -> str:
    """The exception line that ends the last Python traceback in the child's output, if any (``: <line>``)."""
    lines = text.splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.startswith("Traceback (most recent call last)")]
    if not starts:
        return ""
    ends = [ln for ln in lines[starts[-1] + 1:] if re.match(r"^[A-Za-z_][\w.]*(?::|$)", ln)]
    return f": {ends[0].strip()[:300]}" if ends else ""


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def raise_if_fatal(diagnosis: Diagnosis) -> None:
    """Turn a fatal diagnosis into the matching one-line UserError."""
    if not diagnosis.fatal:
        return
    cls: type[UserError] = {
        "permission": NcuPermissionError,
        "invalid_metric": NcuMetricError,
    }.get(diagnosis.kind, NcuSetupError)
    raise cls(diagnosis.message)
