"""Serve campaigns over HTTP: a queue run by the campaign loop, a JSON API and a live dashboard."""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from pathlib import Path

from paretotune.errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; any other "
                        "needs --token)")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--workdir", type=Path, default=Path("paretotune-service"),
                        help="where the queue, campaign files and run directories live")
    parser.add_argument("--token", default=os.environ.get("PARETOTUNE_TOKEN"),
                        help="bearer token every API request must carry (default: $PARETOTUNE_TOKEN)")
    parser.add_argument("--import-root", action="append", dest="import_roots", metavar="MODULE",
                        help="module prefix kernel.source may name (repeatable; default paretotune.kernels.bundled)")
    parser.add_argument("--kernel-dir", action="append", dest="kernel_dirs", type=Path, metavar="DIR",
                        help="folder whose .py files kernel.source may name (repeatable; default none)")
    parser.add_argument("--static-concurrency", type=int, default=1,
                        help="CPU-only (static objective) campaigns run side by side (default 1)")
    parser.add_argument("--gpus", help="comma-separated CUDA device ids for GPU campaigns, one campaign each "
                        "(default: every GPU nvidia-smi lists)")
    parser.add_argument("--max-body", type=int, default=256 * 1024, help="largest request body in bytes")


def main(args: argparse.Namespace) -> int:
    from paretotune.service.config import DEFAULT_IMPORT_ROOTS, ServiceConfig

    try:
        import uvicorn
    except ImportError:
        raise UserError("'paretotune serve' needs fastapi and uvicorn (pip install fastapi uvicorn)") from None
    try:
        args.workdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--workdir {args.workdir}: cannot create it ({exc.strerror})") from None
    config = ServiceConfig(workdir=args.workdir.resolve(), host=args.host, port=args.port, token=args.token or None,
                           import_roots=tuple(args.import_roots or DEFAULT_IMPORT_ROOTS),
                           kernel_dirs=tuple(d.resolve() for d in args.kernel_dirs or ()),
                           static_concurrency=args.static_concurrency,
                           gpus=tuple(g for g in (args.gpus.split(",") if args.gpus is not None else _gpus()) if g),
                           max_body_bytes=args.max_body)
    config.check()
    from paretotune.service.app import create_app

    app = create_app(config)
    print(f"paretotune serve: http://{args.host}:{args.port}/ (workdir {config.workdir}; "
          f"{len(config.gpus)} GPU(s), {config.static_concurrency} static slot(s))", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    return 0


def _gpus() -> list[str]:
    """Device ids nvidia-smi lists (none without it): one campaign per GPU."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        return [d.strip() for d in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [str(i) for i, line in enumerate(out.splitlines()) if line.startswith("GPU ")]
