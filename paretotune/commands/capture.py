"""Run a program, capture its Triton and Helion kernel calls, and write one campaign per kernel.

``paretotune capture --out DIR -- python my_program.py [args]`` runs the program unchanged in a child Python
(:mod:`paretotune.capturing.run_program`), with this command's exit status being the program's. Then it writes
the ranked summary and the campaigns (:mod:`paretotune.capturing.writer`) and checks that each campaign
resolves as ``paretotune run`` will resolve it (in a fresh process, without ``TRITON_INTERPRET``); a kernel
whose campaign does not is listed with the reason and its files are removed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from paretotune.capturing import SAMPLE_EVERY, TIME_FIRST, TIMING
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
    rows, text = finish(args.out, options, check=not args.no_check)
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


def campaign_options(shapes: int, generations: int, wall_clock_s: float | None) -> Any:
    from paretotune.capturing.writer import CampaignOptions

    if shapes < 1:
        raise UserError(f"--shapes: {shapes} is less than 1")
    if generations < 1:
        raise UserError(f"--generations: {generations} is less than 1")
    if wall_clock_s is not None and not wall_clock_s > 0:
        raise UserError(f"--wall-clock-s: {wall_clock_s} is not positive")
    return CampaignOptions(shapes=shapes, generations=generations, wall_clock_s=wall_clock_s)


def check_out(out: Path) -> None:
    """Refuse a capture folder that holds a capture or is a file."""
    from paretotune.capturing.recorder import RECORD

    if out.exists() and not out.is_dir():
        raise UserError(f"--out: {out} is a file, not a folder")
    if (out / RECORD).exists():
        raise UserError(f"--out: {out} already holds a capture ({RECORD}); remove it or choose another folder")


def prepare_out(out: Path) -> bool:
    """Make the capture folder; refuse one that holds a capture or is a file. Whether it was made here."""
    check_out(out)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    return created


def finish(out: Path, options: Any, *, check: bool = True) -> tuple[list[Any], str]:
    """From ``out/capture.json``: the campaigns, their check, the summary. (rows, summary text)."""
    from paretotune.capturing.recorder import RECORD
    from paretotune.capturing.writer import drop_campaign, write_campaigns, write_summary

    doc = json.loads((out / RECORD).read_text(encoding="utf-8"))
    rows = write_campaigns(doc, out, options)
    if check:
        files = {row.rank: (out / row.campaign).resolve() for row in rows if row.campaign}
        try:
            problems = check_in_child(list(files.values()))
        except KeyboardInterrupt:  # the summary is still written; the campaigns are left unchecked
            print("paretotune: capture: interrupted: the campaigns were not checked", file=sys.stderr)
            problems = {}
        for row in rows:
            problem = problems.get(str(files.get(row.rank)))
            if problem:
                drop_campaign(out, row, f"its campaign does not resolve: {problem}")
    return rows, write_summary(doc, rows, out)


def check_in_child(files: list[Path]) -> dict[str, str | None]:
    """Resolve each campaign as ``paretotune run`` would, in a fresh process without ``TRITON_INTERPRET``
    (the campaigns build real kernels even when the program ran under the interpreter): file -> the one-line
    error, or None. A check that cannot run at all leaves the campaigns as they are."""
    if not files:
        return {}
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-m", "paretotune.commands.capture", "--check", *map(str, files)],
                          capture_output=True, text=True, env=env, cwd=files[0].parent, timeout=600)
    try:
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"paretotune: capture: the campaigns could not be checked ({tail})", file=sys.stderr)
        return {}


def _check(files: list[str]) -> dict[str, str | None]:
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter, make_objectives

    out: dict[str, str | None] = {}
    for file in files:
        try:
            campaign = load_campaign(file)
            make_objectives(campaign)
            make_adapter(campaign)
            out[file] = None
        except UserError as exc:
            out[file] = str(exc).removeprefix(f"{Path(file).resolve()}: ")
        except Exception as exc:  # noqa: BLE001 - whatever the kernel's import raises is the reason
            out[file] = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
    return out


if __name__ == "__main__" and sys.argv[1:2] == ["--check"]:
    print(json.dumps(_check(sys.argv[2:])))
