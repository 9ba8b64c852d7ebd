"""Command-line entry point: a table of subcommands; errors become exit codes.

UserError → one line on stderr, exit 2. Anything unexpected → one line plus a hint, exit 1 (``--debug`` shows
the traceback). Ctrl-C → 130.
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
}


def installed_version() -> str:
    """The installed distribution's version (a source tree on PYTHONPATH without an install says so)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("paretotune")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="paretotune", description="Multi-objective Pareto search for GPU kernels "
                                     "over kernel configs and PTXAS Advanced Control Files.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"paretotune {installed_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        mod = importlib.import_module(f"paretotune.commands.{module}")
        sp = sub.add_parser(name, help=(mod.__doc__ or "").strip().splitlines()[0])
        mod.configure(sp)
        sp.set_defaults(_main=mod.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    from paretotune.errors import UserError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._main(args))
    except UserError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"paretotune: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("paretotune: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the top-level handler is the one place that catches everything
        if args.debug:
            traceback.print_exc()
        print(f"paretotune: internal error: {type(exc).__name__}: {exc} (re-run with --debug for the traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
