"""Pretends to be ncu 2025.3.1 for the CPU tests (standard library only).

It accepts the flags paretotune passes, runs the child command with a fake ``nvtx`` module first on its path,
replays the child's push/pop and launch events through the ``--nvtx-include`` filters, and prints what real
ncu prints: ``==PROF==`` lines, the raw CSV page built from the recorded H200 row in
``tests/fixtures/ncu/raw_csv_base_nvtx_triton.txt`` (NVTX cell, kernel name and requested values replaced;
requested metrics the fixture lacks print ``(!) n/a`` as ncu does for unknown metrics), the recorded warnings
when nothing was profiled, and ``==ERROR== The application returned an error code (N).`` with exit code N.

``FAKE_NCU_MODE=perm`` adds the recorded ERR_NVGPUCTRPERM line and profiles nothing. ``--import FILE`` prints
FILE (in report mode this fake writes the CSV text as the "report").

``FAKE_NCU_REPLAY=DIR0:DIR1:…`` runs no child: run N of a batch (the runner's ``run-NNN`` directory) replays
the output real ncu recorded in DIRn (``ncu.log``, ``stdout.txt``, ``stderr.txt``, ``# rc=`` of
``command.txt``; the layout of ``tests/fixtures/ncu/h200_gpu_tests/``).
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "ncu"
VALUE_OPTS = {"--config-file", "--target-processes", "--nvtx-include", "--metrics", "--clock-control",
              "--cache-control", "--replay-mode", "--launch-count", "-c", "--page", "--print-units", "-o",
              "--export", "--log-file", "--import", "-i"}
FLAG_OPTS = {"--nvtx", "--csv", "-f", "--force-overwrite"}
PUSH_POP = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
DEFAULT_DOMAIN = "<default domain>"


def _fixture_lines(name: str, prefix: str) -> list[str]:
    return [ln for ln in (FIXTURES / name).read_text().splitlines() if ln.startswith(prefix)]


def _template() -> tuple[list[str], list[str], list[str]]:
    header, units, row = list(csv.reader(_fixture_lines("raw_csv_base_nvtx_triton.txt", '"')))
    return header, units, row


def _matches(pattern: str, stack: list[tuple[str, str]]) -> bool:
    regex = pattern.startswith("regex:")
    body = pattern[len("regex:"):] if regex else pattern
    if not body.endswith("/"):
        return False  # a start/end expression never matches push/pop ranges
    body = body[:-1]
    domain, _, name = body.rpartition("@")
    domain = domain or DEFAULT_DOMAIN
    for d, n in stack:
        if regex and re.search(domain, d) and re.search(name, n):
            return True
        if not regex and d == domain and n == name:
            return True
    return False


def _fmt(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}"


def _render(launches: list[tuple[list[tuple[str, str]], dict]], metrics: list[str], pid: int) -> str:
    header, units, template = _template()
    extra = [m for m in metrics if m not in header]
    for _, event in launches:
        extra += [m for m in event.get("values", {}) if m not in header and m not in extra]
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header + extra)
    writer.writerow(units + [""] * len(extra))
    for i, (stack, event) in enumerate(launches):
        cells = dict(zip(header, template))
        cells.update({m: "(!) n/a" for m in extra})
        cells["ID"], cells["Process ID"], cells["Kernel Name"] = str(i), str(pid), event["kernel"]
        cells[PUSH_POP] = f"{pid}  " + " ".join(f'"{d}:{n}:none:none:none:none:ASCII:{n}"' for d, n in stack) + " "
        for metric, value in event.get("values", {}).items():
            cells[metric] = value if isinstance(value, str) else _fmt(value)
        writer.writerow([cells[h] for h in header + extra])
    return out.getvalue()


def _replay(log: Path) -> int:
    run = int(log.parent.name.removeprefix("run-"))
    recorded = Path(os.environ["FAKE_NCU_REPLAY"].split(os.pathsep)[run])
    log.write_text((recorded / "ncu.log").read_text())
    sys.stdout.write((recorded / "stdout.txt").read_text())
    sys.stderr.write((recorded / "stderr.txt").read_text())
    rc = re.search(r"^# rc=(-?\d+)", (recorded / "command.txt").read_text(), re.MULTILINE)
    assert rc is not None, recorded
    return int(rc.group(1))


def main(argv: list[str]) -> int:
    if argv == ["--version"]:
        print("NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\n"
              "Version 2025.3.1.0 (build 36398880) (public-release)")
        return 0
    if argv[:1] == ["--query-metrics"]:
        header, _, _ = _template()
        print("Device NVIDIA H200 (GH100)\nMetric Name    Metric Description")
        for name in sorted({h.split(".")[0] for h in header if "__" in h}):
            print(f"{name}    fake description")
        return 0
    opts: dict[str, str] = {}
    includes: list[str] = []
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        arg = argv[i]
        if arg in FLAG_OPTS:
            opts[arg], i = "", i + 1
        elif arg in VALUE_OPTS:
            if arg == "--nvtx-include":
                includes.append(argv[i + 1])
            else:
                opts[arg] = argv[i + 1]
            i += 2
        else:
            print(f"==ERROR== unrecognised option '{arg}'. Use --help for further details.")
            return 1
    if "--import" in opts:
        print(Path(opts["--import"]).read_text(), end="")
        return 0
    if os.environ.get("FAKE_NCU_REPLAY"):
        return _replay(Path(opts["--log-file"]))
    child = argv[i:]
    where = str(Path(opts["--log-file"]).parent) if "--log-file" in opts else None  # the runner's run dir
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, dir=where) as f:
        events_path = f.name
    env = dict(os.environ, FAKE_NCU_EVENTS=events_path,
               PYTHONPATH=os.pathsep.join([str(HERE / "fake_nvtx"), str(HERE), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(child, env=env)
    rc = proc.wait()
    lines = [f"==PROF== Connected to process {proc.pid} ({child[0]})"]
    if os.environ.get("FAKE_NCU_MODE") == "perm":
        lines += [ln for ln in (FIXTURES / "err_nvgpuctrperm_deepgemm46.txt").read_text().splitlines()
                  if ln.startswith("==ERROR==")]
    launches: list[tuple[list[tuple[str, str]], dict]] = []
    stack: list[tuple[str, str]] = []
    for line in Path(events_path).read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "push":
            stack.append((event["domain"] or DEFAULT_DOMAIN, event["name"]))
        elif event["event"] == "pop" and stack:
            stack.pop()
        elif (event["event"] == "launch" and "--nvtx" in opts and any(_matches(p, stack) for p in includes)
              and os.environ.get("FAKE_NCU_MODE") != "perm"):
            launches.append((list(stack), event))
    os.unlink(events_path)
    lines.append(f"==PROF== Disconnected from process {proc.pid}")
    table = _render(launches, opts.get("--metrics", "").split(","), proc.pid) if launches else ""
    if not launches:
        lines += _fixture_lines("nvtx_nomatch_warning.txt", "==WARNING==")
    code = rc if rc >= 0 else 128 - rc
    if code != 0:
        lines.append(f"==ERROR== The application returned an error code ({code}).")
    if "-o" in opts:
        if table:
            Path(opts["-o"] + ".ncu-rep").write_text(table)
        table = ""
    text = "\n".join(lines) + "\n" + table
    if "--log-file" in opts:
        Path(opts["--log-file"]).write_text(text)
    else:
        print(text, end="")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
