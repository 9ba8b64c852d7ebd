"""Who may talk to the server: Host and Origin checks, and a non-simple content type on state changes.

Without a token the server trusts whatever reaches its loopback port, which a web page can do too: a
``<form>`` or ``fetch(..., {mode: "no-cors"})`` POST with ``text/plain`` needs no CORS preflight, and a DNS
rebinding page reaches 127.0.0.1 under its own host name. So every request must carry one of the server's own
names in ``Host``; an ``Origin``, when sent, must name one too; and a state-changing request must declare
``application/json`` or ``application/yaml`` (a browser sends those cross-site only after a preflight the
server never answers) unless it carries the token (which a page cannot know).
"""
from __future__ import annotations

from urllib.parse import urlsplit

from paretotune.service.config import ServiceConfig

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
BODY_TYPES = frozenset({"application/json", "application/yaml"})


def host_name(header: str) -> str:
    """The name part of a Host header value: ``[::1]:8765`` → ``::1``, ``Example.COM.:80`` → ``example.com``."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rpartition(":")[0].rstrip(".") if ":" in value else value.rstrip(".")


def refusal(config: ServiceConfig, method: str, host: str | None, origin: str | None, content_type: str | None,
            authorization: str | None) -> tuple[int, str] | None:
    """(status, message) for a request the server refuses before routing it, or None to let it through."""
    names = config.host_names()
    if host is None or host_name(host) not in names:
        return 403, f"Host {host!r} is not one of this server's names (serve --allow-host adds one)"
    if origin is not None:
        parts = urlsplit(origin.strip())
        if parts.scheme not in ("http", "https") or (parts.hostname or "") not in names:
            return 403, f"cross-origin request refused (Origin {origin!r})"
    if method.upper() in SAFE_METHODS:
        return None
    if config.token and config.authorized(authorization):
        return None
    media = (content_type or "").split(";")[0].strip().lower()
    if media not in BODY_TYPES:
        return 415, ("a state-changing request needs Content-Type application/json or application/yaml "
                     f"(got {media or 'none'})")
    return None
