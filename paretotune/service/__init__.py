"""``paretotune serve``: a queue of campaigns behind an HTTP API and a live dashboard.

The server never runs a campaign in its own process: each one is ``paretotune run --resume`` in a child
process (its own process group, so a cancel kills its workers too), and everything the server knows lives in
files under the work directory, so a restarted server picks up where the last one stopped.
"""
from __future__ import annotations

from paretotune.service.config import ServiceConfig

__all__ = ["ServiceConfig", "create_app"]


def create_app(config: ServiceConfig):
    from paretotune.service.app import create_app as create

    return create(config)
