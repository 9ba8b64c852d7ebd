"""The captured program's process: ``python -m paretotune.capturing.run_program --out DIR [--values[=K,..]]
[--timing=sampled|all] -- (SCRIPT | -m MODULE) [ARGS]``.

The program runs as ``python SCRIPT ARGS`` would run it (``__main__``, ``sys.argv``, ``sys.path[0]`` its
folder; ``-m``: the working directory) with the capture installed; its exit status is this process's. The
record (``DIR/capture.json``) is written when the program ends, however it ends short of being killed, and
only by this process (a forked child inherits the patches but not the duty to write).
"""
from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path
from typing import Any

from paretotune.capturing import hooks
from paretotune.capturing.recorder import Recorder


def parse(argv: list[str]) -> tuple[Path, bool | list[str], str, str, list[str], str]:
    """(out, values, mode "path"|"module", target, program args, timing) from this module's command line."""
    if "--" not in argv:
        raise SystemExit("usage: python -m paretotune.capturing.run_program --out DIR [--values[=K,...]] "
                         "[--timing=sampled|all] -- (SCRIPT | -m MODULE) [ARGS]")
    split = argv.index("--")
    own, program = argv[:split], argv[split + 1:]
    out: Path | None = None
    values: bool | list[str] = False
    timing = "sampled"
    i = 0
    while i < len(own):
        if own[i] == "--out":
            out, i = Path(own[i + 1]), i + 2
        elif own[i] == "--values":
            values, i = True, i + 1
        elif own[i].startswith("--values="):
            values, i = [k for k in own[i].partition("=")[2].split(",") if k], i + 1
        elif own[i].startswith("--timing="):
            timing, i = own[i].partition("=")[2], i + 1
        else:
            raise SystemExit(f"run_program: unknown option {own[i]!r}")
    if out is None or not program:
        raise SystemExit("run_program: --out DIR and a program are required")
    if program[0] == "-m":
        if len(program) < 2:
            raise SystemExit("run_program: -m needs a module name")
        return out, values, "module", program[1], program[2:], timing
    return out, values, "path", program[0], program[1:], timing


def main(argv: list[str]) -> None:
    out, values, mode, target, args, timing = parse(argv)
    script_dir = os.path.dirname(os.path.abspath(target)) if mode == "path" else os.getcwd()
    recorder = Recorder(values=values, values_dir=out, timing=timing)
    program = {"argv": [target, *args] if mode == "path" else ["-m", target, *args], "cwd": os.getcwd(),
               "mode": mode}
    if mode == "path":
        sys.path[0] = script_dir  # as `python SCRIPT` sets it (this module was started with -m: the cwd)
    sys.argv = [target, *args]
    hooks.install(recorder)
    status: Any = 0
    try:
        if mode == "module":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        status = exc.code
        raise
    except BaseException:
        status = 1
        raise
    finally:
        hooks.uninstall()
        if os.getpid() == recorder.pid:
            recorder.save(out, program, status)


if __name__ == "__main__":
    main(sys.argv[1:])
