"""Run a program, capture its Triton and Helion kernel calls, and write one campaign per kernel.

``paretotune capture --out DIR -- python my_program.py [args]`` runs the program unchanged in a child Python
(:mod:`paretotune.capturing.run_program`), with this command's exit status being the program's. Then it writes
the ranked summary and the campaigns (:mod:`paretotune.capturing.folder`) and checks that each campaign
resolves as ``paretotune run`` will resolve it (:mod:`paretotune.campaign.capture_check`: in a fresh process,
without ``TRITON_INTERPRET``); a kernel whose campaign does not is listed with the reason and its files are
removed.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from paretotune.campaign.capture_check import check_in_child
from paretotune.capturing import SAMPLE_EVERY, TIME_FIRST, TIMING
from paretotune.capturing.folder import campaign_options, check_out, finish, prepare_out
from paretotune.errors import UserError

PYTHON = re.compile(r"^python[0-9.]*(\.exe)?$")
VALUE_FLAGS = ("-X", "-W")  # interpreter options that take the next word as their value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="capture folder (made; must not hold a capture)")
    parser.add_argument("--values", nargs="?", const="*", metavar="KERNELS",
                        help="save each signature's first-call tensors beside the campaigns and rebuild inputs "
                             "from them (for kernels whose correctness depends on value ranges); all kernels, "
                             "or the comma-separated kernel names")
    parser.add_argument("--timing", choices=TIMING, default="sampled",
                        help=f"key (signature) and GPU-time every call ('all': exact counts per signature), or a "
                             f"sample: each kernel's first {TIME_FIRST} calls, then about one in {SAMPLE_EVERY} at "
                             "random, counts and times per signature scaled to all the kernel's calls ('sampled', "
                             "the default: every other call costs only its count)")
    parser.add_argument("--shapes", type=int, default=3,
                        help="signatures per campaign, the most expensive first (default 3)")
    parser.add_argument("--generations", type=int, default=2, help="CompileIQ generations per campaign (default 2)")
    parser.add_argument("--wall-clock-s", type=float, help="search.wall_clock_s of each campaign")
    parser.add_argument("--no-check", action="store_true", help="do not check that each campaign resolves")
    parser.add_argument("program", nargs=argparse.REMAINDER,
                        help="-- python my_program.py [args] (or: -- python -m module [args])")


def main(args: argparse.Namespace) -> int:
    from paretotune.capturing.recorder import RECORD

    flags, program = program_command(list(args.program))
    options = campaign_options(args.shapes, args.generations, args.wall_clock_s)
    values = [] if args.values is None else (["--values"] if args.values == "*" else [f"--values={args.values}"])
    check_out(args.out)
    require_gpu_or_interpreter()
    created = prepare_out(args.out)
    command = [sys.executable, *flags, "-m", "paretotune.capturing.run_program", "--out", str(args.out), *values,
               f"--timing={args.timing}", "--", *program]
    code = _wait(subprocess.Popen(command))
    if not (args.out / RECORD).is_file():
        if created:
            shutil.rmtree(args.out, ignore_errors=True)
        print(f"paretotune: capture: the program ended (exit code {code}) before its capture was saved; "
              "nothing written", file=sys.stderr)
        return code or 1
    rows, text = finish(args.out, options, check=None if args.no_check else check_in_child)
    print(text, end="")
    unknown = sorted(set(values and args.values != "*" and args.values.split(",") or []) - {r.kernel for r in rows})
    if unknown:
        print(f"paretotune: capture: --values: no captured kernel is called {', '.join(unknown)}", file=sys.stderr)
    return code


def _wait(proc: subprocess.Popen[bytes]) -> int:
    """The program's exit status. A Ctrl-C reaches the program too, which then saves its record: this waits for
    that (a second Ctrl-C kills it)."""
    interrupts = 0
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            interrupts += 1
            if interrupts > 1:
                proc.kill()


def program_command(words: list[str]) -> tuple[list[str], list[str]]:
    """(interpreter options, ``SCRIPT args`` or ``-m MODULE args``) of the program after ``--``. The program
    runs under this Python (the one paretotune is installed in) whatever ``python`` it names."""
    if words[:1] == ["--"]:
        words = words[1:]
    if not words:
        raise UserError("capture: no program given: paretotune capture --out DIR -- python my_program.py [args]")
    if words[0].endswith(".py"):
        return [], words
    if not PYTHON.match(os.path.basename(words[0])):
        raise UserError(f"capture: {words[0]!r} is not a Python program: give `python my_program.py [args]` or "
                        "`python -m module [args]` after --")
    flags, rest = [], words[1:]
    while rest and rest[0].startswith("-") and rest[0] != "-m":
        if rest[0] == "-c":
            raise UserError("capture: `python -c CODE` is not supported: put the code in a file, or use -m")
        flags.append(rest.pop(0))
        if flags[-1] in VALUE_FLAGS and rest:
            flags.append(rest.pop(0))
    if not rest or (rest[0] == "-m" and len(rest) < 2):
        raise UserError("capture: no script or module after the Python interpreter")
    if rest[0] != "-m" and not Path(rest[0]).is_file():
        raise UserError(f"capture: no such program file: {rest[0]}")
    return flags, rest


def require_gpu_or_interpreter() -> None:
    """Refuse, before anything runs or is made, a capture on a machine without a GPU unless the program's Triton
    kernels run under Triton's interpreter (they would fail at their first launch, deep in the program)."""
    if os.environ.get("TRITON_INTERPRET", "").strip().lower() not in ("", "0", "false", "off", "no"):
        return
    import torch

    if not torch.cuda.is_available():
        raise UserError("capture: no GPU here: set TRITON_INTERPRET=1 to run the program's kernels on the CPU "
                        "(TRITON_INTERPRET=1 paretotune capture ...)")
