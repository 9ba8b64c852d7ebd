"""Command-line entry point: a table of subcommands; errors become exit codes.

UserError → one line on stderr, exit 2. Anything unexpected → one line plus a hint, exit 1 (``--debug``, before
or after the subcommand, shows the traceback). Ctrl-C → 130. A reader that closes the pipe early (``paretotune
front RUN | head``) ends the command quietly, exit 0: what it had to do is done, only the rest of the text is unread.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import traceback

# subcommand -> module under paretotune.commands; each module has configure(parser) and main(args) -> int
COMMANDS: dict[str, str] = {
    "run": "run",
    "front": "front",
    "resume": "resume",
    "validate": "validate",
    "report": "report",
    "export": "export",
    "serve": "serve",
    "capture": "capture",
    "ship": "ship",
    "exec": "execute",
}


def installed_version() -> str:
    """The installed distribution's version (a source tree on PYTHONPATH without an install says so)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("paretotune")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked (importlib.metadata is slow to load)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"paretotune {installed_version()}")
        parser.exit()


ENVIRONMENT = """environment:
  CIQ_SEARCH_SPACES_DIR  folder with CompileIQ's offline search spaces (manifest.json and ptxas13.3.bin) for
                         acf.search_space on a machine without internet access. Unset, a source checkout reads
                         ../shared/compileiq beside it if it is there (the copy CI uses), else CompileIQ
                         downloads the space."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="paretotune", description="Multi-objective Pareto search for GPU kernels "
                                     "over kernel configs and PTXAS Advanced Control Files.", epilog=ENVIRONMENT,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action=_Version, nargs=0, help="show the installed version and exit")
    # --debug after the subcommand too (where the error's hint leads users to put it); SUPPRESS keeps a
    # subcommand without it from resetting the one given before
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        mod = importlib.import_module(f"paretotune.commands.{module}")
        sp = sub.add_parser(name, help=(mod.__doc__ or "").strip().splitlines()[0], parents=[debug], epilog=ENVIRONMENT,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.configure(sp)
        sp.set_defaults(_main=mod.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    from paretotune.errors import UserError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = int(args._main(args))
        sys.stdout.flush()  # a reader gone shows here, not as a traceback when the interpreter flushes at exit
        return code
    except UserError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"paretotune: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("paretotune: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_left()
    except Exception as exc:  # noqa: BLE001 - the top-level handler is the one place that catches everything
        if args.debug:
            traceback.print_exc()
        print(f"paretotune: internal error: {type(exc).__name__}: {exc} (re-run with --debug for the traceback)",
              file=sys.stderr)
        return 1


def _reader_left() -> int:
    """The reader of stdout closed it (``| head``): point stdout at /dev/null, so that the interpreter's flush at
    exit does not fail again, and end quietly (Python's documented recipe for SIGPIPE, with exit 0)."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0


if __name__ == "__main__":
    sys.exit(main())
