"""The HTTP API (FastAPI): submit, list, inspect, cancel campaigns; fronts, artifacts, reports; the dashboard.

Handlers that read files are plain ``def`` functions, so FastAPI runs them in its thread pool and a slow one
(a report, a cancel waiting for a process to die) never blocks the status endpoints. A submission is parsed
and checked in a checker process (:mod:`.checkers`); ``/healthz`` and the dashboard page are ``async`` and
need no thread. Every request first passes :mod:`.guard` (Host, Origin, content type) and the token check.
While the app runs it holds the work directory's lock (:mod:`.lock`): one server per work directory. The routes
are registered in groups (:mod:`.routes`); this module builds the app around them.
"""
from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from paretotune.service.checkers import CheckerPool
from paretotune.service.config import ServiceConfig
from paretotune.service.guard import refusal
from paretotune.service.lock import WorkdirLock
from paretotune.service.progress import RunView
from paretotune.service.queue import Scheduler
from paretotune.service.routes import Campaigns, add_pages, add_queue_routes, add_run_routes
from paretotune.service.store import CampaignStore

OPEN_PATHS = frozenset({"/", "/dashboard", "/healthz"})  # pages without data: the dashboard sends the token itself


def create_app(config: ServiceConfig, lock: WorkdirLock | None = None) -> FastAPI:
    """The app for ``config``; ``lock`` is the work directory's lock if the caller took it already (``serve``
    does, to refuse a second server before it listens), else the lifespan takes it before the scheduler starts."""
    config.check()
    store = CampaignStore(config.workdir)
    scheduler = Scheduler(store, config)
    checkers = CheckerPool(config)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        held = lock if lock is not None else WorkdirLock(config.workdir)
        held.acquire()
        try:
            scheduler.start()
            checkers.start()
            try:
                yield
            finally:
                checkers.shutdown()
                scheduler.shutdown()
        finally:
            held.release()

    # FastAPI's /docs and /redoc load their scripts from a CDN: off; /docs (.routes) renders the schema offline
    app = FastAPI(title="paretotune", version="1", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Queue multi-objective kernel-tuning campaigns and read their Pareto fronts.")
    app.state.store, app.state.scheduler, app.state.config = store, scheduler, config
    add_guard(app, config)
    campaigns = Campaigns(store, scheduler, RunView())
    add_queue_routes(app, campaigns, checkers, config)
    add_run_routes(app, campaigns)
    add_pages(app)
    return app


def add_guard(app: FastAPI, config: ServiceConfig) -> None:
    """Every request passes :func:`~.guard.refusal` (Host, Origin, content type), the token check (but for
    :data:`OPEN_PATHS`) and the body size limit before any route."""

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Response:
        headers = request.headers
        refused = refusal(config, request.method, headers.get("host"), headers.get("origin"),
                          headers.get("content-type"), headers.get("authorization"))
        if refused is not None and refused[0] == 403:
            return JSONResponse({"detail": refused[1]}, status_code=403)
        if request.url.path not in OPEN_PATHS and not config.authorized(headers.get("authorization")):
            return JSONResponse({"detail": "missing or wrong bearer token"}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"})
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > config.max_body_bytes):
            return JSONResponse({"detail": f"request body over {config.max_body_bytes} bytes"}, status_code=413)
        if refused is not None:
            return JSONResponse({"detail": refused[1]}, status_code=refused[0])
        return await call_next(request)
