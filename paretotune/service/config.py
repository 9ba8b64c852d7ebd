"""What a server is allowed to do: where it keeps state, which kernels it imports, who may call it."""
from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from paretotune.errors import UserError

DEFAULT_IMPORT_ROOTS = ("paretotune.kernels.bundled",)
MAX_BODY_BYTES = 256 * 1024  # a campaign file is a few hundred bytes; anything near this is not one


@dataclass(frozen=True)
class ServiceConfig:
    """Settings of one server; :meth:`check` refuses unsafe combinations before anything listens."""

    workdir: Path
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    import_roots: tuple[str, ...] = DEFAULT_IMPORT_ROOTS  # dotted module prefixes kernel.source may name
    kernel_dirs: tuple[Path, ...] = ()  # folders whose .py files kernel.source may name
    static_concurrency: int = 1  # CPU-only (static) campaigns run side by side up to this many
    gpus: tuple[str, ...] = ()  # CUDA device ids; one GPU campaign per device at a time
    max_body_bytes: int = MAX_BODY_BYTES
    poll_s: float = 0.2
    python: str | None = None  # interpreter for campaign processes (default: this one)
    extra_env: dict[str, str] = field(default_factory=dict)

    def check(self) -> None:
        if not is_loopback(self.host) and not self.token:
            raise UserError(f"--host {self.host}: binding a non-loopback address needs a token "
                            "(--token or PARETOTUNE_TOKEN); without one anyone who can reach the port could run code")
        if self.static_concurrency < 1:
            raise UserError(f"--static-concurrency: must be at least 1 (got {self.static_concurrency})")
        if self.token is not None and len(self.token) < 16:
            raise UserError("--token: use at least 16 characters")

    def authorized(self, header: str | None) -> bool:
        """``Authorization: Bearer <token>``; every request passes when no token is configured (loopback only)."""
        if not self.token:
            return True
        if not header or not header.startswith("Bearer "):
            return False
        return hmac.compare_digest(header[len("Bearer "):].encode(), self.token.encode())


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere
