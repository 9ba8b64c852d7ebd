"""Joining or starting Ray for a campaign, and importing ray only then (it is an optional dependency)."""
from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from typing import Any

from paretotune.errors import UserError
from paretotune.extras import require


def import_ray(where: str = "campaign") -> Any:
    """The ray module, or a one-line error naming the extra to install (``where``: the campaign file)."""
    return require("ray", "ray", f"{where}: execution.backend: 'ray'", instead="use backend: local")


@dataclass
class RaySession:
    """Our connection to Ray: ``owned`` if we called ``ray.init`` (so we undo it), ``started`` if that started
    a new local instance (then ``ray.shutdown`` stops it; otherwise it only disconnects this driver)."""

    owned: bool
    started: bool
    address: str

    def close(self) -> None:
        ray = import_ray()
        if self.owned and ray.is_initialized():
            ray.shutdown()
        self.owned = False


def connect_ray(address: str, *, local_cpus: int, local_gpus: int | None = None,
                where: str = "campaign") -> RaySession:
    """Join or start Ray. ``auto``: ``RAY_ADDRESS`` or a running local cluster, else a new local instance;
    ``local``: always a new local instance; anything else (``host:port``, ``ray://host:port``): that cluster.
    ``local_gpus`` declares GPUs for a local instance (default: Ray detects them); ``where`` names the
    campaign file in error messages."""
    ray = import_ray(where)
    if ray.is_initialized():  # the caller (a notebook, a test) already connected: use it, leave it alone
        return RaySession(owned=False, started=False, address="existing")
    quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    target = (os.environ.get("RAY_ADDRESS") or "auto") if address == "auto" else address
    if target == "auto":
        found = _running_cluster()
        target = "local" if found is None or (found != "auto" and not _reachable(found)) else found
    try:
        if target == "local":
            ray.init(num_cpus=local_cpus, num_gpus=local_gpus, include_dashboard=False, **quiet)
            return RaySession(owned=True, started=True, address="local")
        if target != "auto" and not _reachable(target):  # ray.init would retry for minutes
            raise ConnectionError("nothing answers there")
        ray.init(address=target, **quiet)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise UserError(f"{where}: execution.address: cannot {'start' if target == 'local' else 'connect to'} "
                        f"Ray at '{target}' ({text}); check 'ray status', or use address: local") from None
    return RaySession(owned=True, started=False, address=target)


def _running_cluster() -> str | None:
    """The cluster ``ray.init(address="auto")`` would join, or None; "auto" if this Ray hides how it finds it."""
    try:
        from ray._private.services import get_ray_address_from_environment
    except ImportError:
        return "auto"
    try:
        return str(get_ray_address_from_environment("auto", None))
    except ConnectionError:
        return None


def _reachable(address: str, timeout_s: float = 5.0) -> bool:
    """Whether ``[ray://]host:port`` accepts a TCP connection (a stale or mistyped address fails fast)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return True  # not host:port: let Ray parse it and explain
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False
