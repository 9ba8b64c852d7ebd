"""What a server is allowed to do: where it keeps state, which kernels it imports, who may call it, where it
connects, and how much a submitted campaign may ask for."""
from __future__ import annotations

import hmac
import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path

from paretotune.errors import UserError

# paretotune's own kernels and input factories (kernel.inputs of the pretuned campaigns)
DEFAULT_IMPORT_ROOTS = ("paretotune.kernels.bundled", "paretotune.kernels.workloads")
MAX_BODY_BYTES = 256 * 1024  # a campaign file is a few hundred bytes; anything near this is not one
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
MAX_CONNECTION_TIMEOUT_S = 3600.0  # --request-timeout and --idle-timeout: an hour is already no limit
MAX_CHECK_WORKERS = 8  # each checker imports torch and Triton (a few hundred MB): more cores, not more memory


def default_check_workers() -> int:
    """Checker processes by default: one per core this process may use, at most :data:`MAX_CHECK_WORKERS`.
    A check is CPU-bound (parse, kernel import, shape checks): with one checker, concurrent submissions queue
    behind each other and are answered 503 + Retry-After (docs/results.md)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(MAX_CHECK_WORKERS, cores))


@dataclass(frozen=True)
class ServiceLimits:
    """The most a submitted campaign may ask of this machine; each has a ``serve`` flag (see commands/serve.py)."""

    max_workers: int = max(2, os.cpu_count() or 1)  # evaluation.workers (2: the quickstart runs anywhere)
    max_evaluations: int = 5000  # search.generations × search.pool_size
    max_shapes: int = 16
    max_objectives: int = 16
    max_wall_clock_s: float = 24 * 3600.0  # search.wall_clock_s
    max_timeout_s: float = 600.0  # evaluation.compile_timeout_s, compile_timeout_min_s, measure_timeout_s
    max_gpu_spares: int = 3  # evaluation.gpu_spares
    max_measure_ms: float = 10_000.0  # evaluation.warmup_ms, rep_ms
    max_knob_values: int = 256  # values per kernel.space knob
    max_name_chars: int = 200  # name


@dataclass(frozen=True)
class ServiceConfig:
    """Settings of one server; :meth:`check` refuses unsafe combinations before anything listens."""

    workdir: Path
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    import_roots: tuple[str, ...] = DEFAULT_IMPORT_ROOTS  # dotted module prefixes code fields may name (CODE_FIELDS)
    kernel_dirs: tuple[Path, ...] = ()  # folders whose .py files code fields may name
    static_concurrency: int = 1  # CPU-only (static) campaigns run side by side up to this many
    gpus: tuple[str, ...] = ()  # CUDA device ids; one GPU campaign per device at a time
    max_body_bytes: int = MAX_BODY_BYTES
    poll_s: float = 0.2
    python: str | None = None  # interpreter for campaign processes (default: this one)
    extra_env: dict[str, str] = field(default_factory=dict)
    allowed_hosts: tuple[str, ...] = ()  # Host header names accepted besides loopback names and ``host``
    ray_address: str | None = None  # the only Ray cluster campaigns may use; None: Ray campaigns are refused
    limits: ServiceLimits = ServiceLimits()
    check_workers: int = field(default_factory=default_check_workers)  # processes that parse and check submissions
    check_timeout_s: float = 30.0  # a submission whose check takes longer is refused and its checker killed
    max_pending_checks: int = 16  # submissions waiting for a free checker; more are answered 503 + Retry-After
    # slow clients (service/connections.py): a request (line, headers, body) must arrive within request_timeout_s
    # of its first byte (or of the connection opening); a connection waiting idle_timeout_s for its next request
    # is closed; one peer address holds at most max_client_connections open (all local clients share 127.0.0.1)
    request_timeout_s: float = 10.0
    idle_timeout_s: float = 5.0  # uvicorn's timeout_keep_alive (its default)
    max_client_connections: int = 64

    def check(self) -> None:
        if not 0 <= self.port <= 65535:
            raise UserError(f"--port {self.port}: must be between 0 and 65535")
        if not is_loopback(self.host) and not self.token:
            raise UserError(f"--host {self.host}: binding a non-loopback address needs a token "
                            "(--token or PARETOTUNE_TOKEN); without one anyone who can reach the port could run code")
        if self.host in WILDCARD_HOSTS and not self.allowed_hosts:
            raise UserError(f"--host {self.host!r}: name the host names clients will use with --allow-host "
                            "(requests whose Host header is not one of the server's names are refused)")
        if self.static_concurrency < 1:
            raise UserError(f"--static-concurrency: must be at least 1 (got {self.static_concurrency})")
        if self.token is not None and len(self.token) < 16:
            raise UserError("--token: use at least 16 characters")
        if self.check_workers < 1:
            raise UserError(f"--check-workers: must be at least 1 (got {self.check_workers})")
        for flag, seconds in (("--request-timeout", self.request_timeout_s), ("--idle-timeout", self.idle_timeout_s)):
            if not 0 < seconds <= MAX_CONNECTION_TIMEOUT_S:
                raise UserError(f"{flag}: must be more than 0 and at most {MAX_CONNECTION_TIMEOUT_S:g} seconds "
                                f"(got {seconds:g})")
        if self.max_client_connections < 1:
            raise UserError(f"--max-client-connections: must be at least 1 (got {self.max_client_connections})")
        for name, value in vars(self.limits).items():
            if value <= 0:
                raise UserError(f"--{name.replace('_', '-')}: must be positive (got {value})")

    def authorized(self, header: str | None) -> bool:
        """``Authorization: Bearer <token>``; every request passes when no token is configured (loopback only)."""
        if not self.token:
            return True
        if not header or not header.startswith("Bearer "):
            return False
        return hmac.compare_digest(header[len("Bearer "):].encode(), self.token.encode())

    def host_names(self) -> frozenset[str]:
        """Names a request's Host (and Origin) may carry: loopback, the bound host, and the configured ones."""
        names = {*LOOPBACK_NAMES, *(h.lower() for h in self.allowed_hosts)}
        if self.host not in WILDCARD_HOSTS:
            names.add(self.host.lower().strip("[]"))
        return frozenset(names)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere
