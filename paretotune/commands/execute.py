"""Run a program with shipped ACFs applied to exactly the Triton/Helion kernels they were validated on.

``paretotune exec --acfs DIR -- PROGRAM [ARGS...]``: every Triton compile in the program's process tree goes
through a ptxas wrapper that adds ``--apply-controls`` to a build only when DIR/acfs.json has an entry for that
build's PTX hash, target arch and ptxas release; every other build is left exactly as it was. A shipped Helion
heuristic in DIR (``_helion_aot_*.py``) is put first on Helion's lookup path (``HELION_HEURISTIC_DIR``), so the
program's Helion AOT kernels take its configs and ACFs. The program's kernels build into a Triton cache of exec's
own (per shipped folder), never the usual one. Exits with the program's exit code. --verbose lists, after the
program ends, which kernels got an ACF and which were skipped and why.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from paretotune.ship.shipped_acfs import ShippedEnvironment


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--acfs", type=Path, required=True, metavar="SHIPPED_DIR",
                        help="a folder with acfs.json and the <sha256>.acf files it names")
    parser.add_argument("--verbose", action="store_true",
                        help="after the program: each kernel build, with the ACF applied or why it was skipped")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM [ARGS...]")


def main(args: argparse.Namespace) -> int:
    import os
    import subprocess
    import sys
    import tempfile

    from paretotune.errors import UserError
    from paretotune.ship.shipped_acfs import read_log, shipped_environment

    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        raise UserError("exec: no program given (paretotune exec --acfs DIR -- PROGRAM [ARGS...])")
    fd, log_name = tempfile.mkstemp(prefix="paretotune-exec-", suffix=".jsonl")
    os.close(fd)
    log = Path(log_name)
    try:
        shipped = shipped_environment(args.acfs, log)
        try:
            code = subprocess.run(program, env={**os.environ, **shipped.env}, check=False).returncode
        except FileNotFoundError:
            raise UserError(f"exec: {program[0]}: command not found") from None
        except PermissionError:
            raise UserError(f"exec: {program[0]}: not executable") from None
        for line in _helion_lines(shipped, args.verbose) + _summary(read_log(log), args.verbose):
            print(line, file=sys.stderr)
    finally:
        log.unlink(missing_ok=True)
    return 128 - code if code < 0 else code  # killed by a signal: the shell's convention (128 + signal number)


def _helion_lines(shipped: ShippedEnvironment, verbose: bool) -> list[str]:
    """Which shipped Helion heuristics the program's Helion looked up first (under --verbose), and always when
    the program's own HELION_HEURISTIC_DIR kept them out."""
    names = ", ".join(p.name for p in shipped.helion_heuristics)
    if shipped.helion_dir_kept is not None:
        return [f"paretotune exec: HELION_HEURISTIC_DIR={shipped.helion_dir_kept} was already set and is kept: the "
                f"shipped Helion heuristics ({names}) were not used"]
    return [f"paretotune exec: Helion heuristics from the shipped folder first: {names}"] if verbose and names else []


def _summary(decisions: list[dict[str, object]], verbose: bool) -> list[str]:
    """One line per build under --verbose; without it only the refusals (a tampered or missing ACF)."""
    lines = []
    for d in decisions:
        what = f"applied {d['acf']}" if d.get("acf") else f"skipped: {d.get('reason')}"
        if verbose or str(d.get("reason", "")).startswith("refused"):
            build = f"{d.get('kernel', '?')} ({d.get('arch')}, ptx {str(d.get('ptx_sha256'))[:12]})"
            lines.append(f"paretotune exec: {build}: {what}")
    if verbose:
        applied = sum(1 for d in decisions if d.get("acf"))
        lines.append(f"paretotune exec: {applied} of {len(decisions)} kernel builds got a shipped ACF")
    return lines
