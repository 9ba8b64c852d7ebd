"""Serve campaigns over HTTP: a queue run by the campaign loop, a JSON API and a live dashboard."""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
from pathlib import Path

from paretotune.errors import UserError
from paretotune.extras import require


def configure(parser: argparse.ArgumentParser) -> None:
    from paretotune.service.config import ServiceLimits

    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; any other "
                        "needs --token)")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--workdir", type=Path, default=Path("paretotune-service"),
                        help="where the queue, campaign files and run directories live (one server at a time)")
    parser.add_argument("--token", default=os.environ.get("PARETOTUNE_TOKEN"),
                        help="bearer token every API request must carry (default: $PARETOTUNE_TOKEN)")
    parser.add_argument("--allow-host", action="append", dest="allowed_hosts", metavar="NAME",
                        help="a host name clients use to reach the server (repeatable); requests whose Host "
                        "header is not 127.0.0.1, localhost, ::1, --host or one of these are refused")
    parser.add_argument("--ray-address", metavar="ADDRESS",
                        help="the Ray cluster campaigns with execution.backend: ray run on (host:port, ray://..., "
                        "auto or local); without it such campaigns are refused. Campaigns never name one")
    parser.add_argument("--import-root", action="append", dest="import_roots", metavar="MODULE",
                        help="module prefix kernel.source and kernel.inputs may name (repeatable; default "
                        "paretotune.kernels.bundled and paretotune.kernels.workloads)")
    parser.add_argument("--kernel-dir", action="append", dest="kernel_dirs", type=Path, metavar="DIR",
                        help="folder whose .py files kernel.source, kernel.inputs and kernel.heuristic may name "
                        "(repeatable; default none)")
    parser.add_argument("--static-concurrency", type=int, default=1,
                        help="CPU-only (static objective) campaigns run side by side (default 1)")
    parser.add_argument("--gpus", help="comma-separated CUDA device ids for GPU campaigns, one campaign each "
                        "(default: every GPU nvidia-smi lists)")
    parser.add_argument("--max-body", type=int, default=256 * 1024, help="largest request body in bytes")
    parser.add_argument("--check-workers", type=int,
                        help="processes that parse and check submitted campaigns (default: one per core, at most 8; "
                             "more submissions at once than checkers plus 16 waiting are answered 503 + Retry-After)")
    parser.add_argument("--check-timeout", type=float, default=30.0,
                        help="seconds a submission's check may take before it is refused (default 30)")
    slow = parser.add_argument_group("slow clients (a connection past a limit is closed)")
    slow.add_argument("--request-timeout", type=float, default=10.0, metavar="SECONDS",
                      help="seconds a request (line, headers and body) may take to arrive, counted from the "
                      "connection opening or the request's first byte (default 10)")
    slow.add_argument("--idle-timeout", type=float, default=5.0, metavar="SECONDS",
                      help="seconds a connection may wait for its next request after a response (default 5)")
    slow.add_argument("--max-client-connections", type=int, default=64, metavar="N",
                      help="open connections one client address may hold; more are answered 503 and closed "
                      "(default 64; every local client shares 127.0.0.1)")
    limits = parser.add_argument_group("limits on submitted campaigns (over a limit: 422 naming the field)")
    default = ServiceLimits()
    for name, kind, what in (
            ("max_workers", int, "evaluation.workers"),
            ("max_evaluations", int, "search.generations × search.pool_size"),
            ("max_shapes", int, "shapes per campaign"), ("max_objectives", int, "objectives per campaign"),
            ("max_wall_clock_s", float, "search.wall_clock_s"),
            ("max_timeout_s", float, "evaluation.compile_timeout_s, compile_timeout_min_s, measure_timeout_s"),
            ("max_gpu_spares", int, "evaluation.gpu_spares"),
            ("max_measure_ms", float, "evaluation.warmup_ms and rep_ms"),
            ("max_knob_values", int, "values per kernel.space knob"), ("max_name_chars", int, "characters in name")):
        limits.add_argument(f"--{name.replace('_', '-')}", type=kind, default=getattr(default, name),
                            help=f"most {what} (default {getattr(default, name):g})")


def main(args: argparse.Namespace) -> int:
    from paretotune.service.config import DEFAULT_IMPORT_ROOTS, ServiceConfig, ServiceLimits, default_check_workers

    require("fastapi", "service", "'paretotune serve'")
    uvicorn = require("uvicorn", "service", "'paretotune serve'")
    limits = ServiceLimits(**{name: getattr(args, name) for name in vars(ServiceLimits())})
    config = ServiceConfig(workdir=args.workdir.absolute(), host=args.host, port=args.port,
                           token=args.token or None, import_roots=tuple(args.import_roots or DEFAULT_IMPORT_ROOTS),
                           kernel_dirs=tuple(d.resolve() for d in args.kernel_dirs or ()),
                           static_concurrency=args.static_concurrency,
                           gpus=tuple(g for g in (args.gpus.split(",") if args.gpus is not None else _gpus()) if g),
                           max_body_bytes=args.max_body, allowed_hosts=tuple(args.allowed_hosts or ()),
                           ray_address=args.ray_address, limits=limits,
                           check_workers=default_check_workers() if args.check_workers is None else args.check_workers,
                           check_timeout_s=args.check_timeout, request_timeout_s=args.request_timeout,
                           idle_timeout_s=args.idle_timeout, max_client_connections=args.max_client_connections)
    config.check()
    try:
        args.workdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--workdir {args.workdir}: cannot create it ({exc.strerror})") from None
    config = ServiceConfig(**{**vars(config), "workdir": args.workdir.resolve()})
    from paretotune.service.lock import WorkdirLock

    lock = WorkdirLock(config.workdir).acquire()  # before anything listens or touches the queue
    sock = _listen(config.host, config.port)
    from paretotune.service.app import create_app

    app = create_app(config, lock=lock)
    port = sock.getsockname()[1]
    print(f"paretotune serve: http://{_url_host(args.host)}:{port}/ (workdir {config.workdir}; "
          f"{len(config.gpus)} GPU(s), {config.static_concurrency} static slot(s))", flush=True)
    from paretotune.service.connections import guarded_protocol

    # h11 with a request deadline and a per-address cap (service/connections.py); no WebSocket routes, so no
    # upgrades (an upgraded connection would leave the cap's count); SIGTERM: gone within seconds
    http = guarded_protocol(config.request_timeout_s, config.max_client_connections)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, http=http, ws="none",
                                           timeout_keep_alive=config.idle_timeout_s,  # type: ignore[arg-type]
                                           timeout_graceful_shutdown=2))
    server.run(sockets=[sock])
    return 0


def _listen(host: str, port: int) -> socket.socket:
    """Bind before uvicorn starts, so a taken port or a bad host is a one-line error rather than its log
    (IPv6 for an address with ':', else IPv4, as uvicorn binds)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except (OSError, UnicodeError, OverflowError) as exc:
        sock.close()
        raise UserError(f"--host {host} --port {port}: cannot listen there "
                        f"({getattr(exc, 'strerror', None) or exc})") from None
    sock.set_inheritable(False)
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


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
