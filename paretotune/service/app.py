"""The HTTP API (FastAPI): submit, list, inspect, cancel campaigns; fronts, artifacts, reports; the dashboard.

Handlers that read files are plain ``def`` functions, so FastAPI runs them in its thread pool and a slow one
(a report, a cancel waiting for a process to die) never blocks the status endpoints. A submission is parsed
and checked in a checker process (:mod:`.checkers`); ``/healthz`` and the dashboard page are ``async`` and
need no thread. Every request first passes :mod:`.guard` (Host, Origin, content type) and the token check.
While the app runs it holds the work directory's lock (:mod:`.lock`): one server per work directory.
"""
from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from pydantic import BaseModel

from paretotune.service.checkers import Busy, CheckerPool
from paretotune.service.config import ServiceConfig
from paretotune.service.guard import refusal
from paretotune.service.lock import WorkdirLock
from paretotune.service.progress import RunView, artifact_names, artifact_path, budget_of
from paretotune.service.queue import Scheduler
from paretotune.service.store import CampaignState, CampaignStore

OPEN_PATHS = frozenset({"/", "/dashboard", "/healthz"})  # pages without data: the dashboard sends the token itself


class Submitted(BaseModel):
    id: str
    status: str


class Problem(BaseModel):
    detail: Any


class CampaignSummary(BaseModel):
    id: str
    seq: int
    name: str
    kind: str
    status: str
    submitted: float
    started: float | None = None
    finished: float | None = None
    attempts: int
    returncode: int | None = None
    error: str | None = None
    progress: dict[str, Any]


class CampaignList(BaseModel):
    campaigns: list[CampaignSummary]


class BodyTooLarge(Exception):
    pass


def create_app(config: ServiceConfig, lock: WorkdirLock | None = None) -> FastAPI:
    """The app for ``config``; ``lock`` is the work directory's lock if the caller took it already (``serve``
    does, to refuse a second server before it listens), else the lifespan takes it before the scheduler starts."""
    config.check()
    store = CampaignStore(config.workdir)
    scheduler = Scheduler(store, config)
    checkers = CheckerPool(config)
    views = RunView()
    budgets: dict[str, int] = {}

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

    # FastAPI's /docs and /redoc load their scripts from a CDN: off; /docs below renders the schema offline
    app = FastAPI(title="paretotune", version="1", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Queue multi-objective kernel-tuning campaigns and read their Pareto fronts.")
    app.state.store, app.state.scheduler, app.state.config = store, scheduler, config

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

    def _state(cid: str) -> CampaignState:
        state = store.get(cid)
        if state is None:
            raise HTTPException(404, f"no campaign '{cid}'")
        return state

    def _summary(state: CampaignState) -> CampaignSummary:
        if state.id not in budgets:
            try:
                budgets[state.id] = budget_of((store.folder(state.id) / "campaign.yaml").read_text("utf-8"))
            except OSError:
                budgets[state.id] = 0
        progress = views.progress(store.run_dir(state.id), budgets[state.id])
        return CampaignSummary(id=state.id, seq=state.seq, name=state.name, kind=state.kind, status=state.status,
                               submitted=state.submitted, started=state.started, finished=state.finished,
                               attempts=state.attempts, returncode=state.returncode, error=state.error,
                               progress=progress)

    @app.post("/campaigns", status_code=201, response_model=Submitted,
              responses={413: {"model": Problem}, 415: {"model": Problem}, 422: {"model": Problem},
                         503: {"model": Problem}},
              openapi_extra={"requestBody": {"required": True, "content": {
                  "application/json": {"schema": {"type": "object"}},
                  "application/yaml": {"schema": {"type": "string"}}}}})
    async def submit(request: Request) -> Any:
        """Queue a campaign (YAML or JSON body, the same fields as a campaign file); returns its id."""
        body = bytearray()
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > config.max_body_bytes:
                return JSONResponse({"detail": f"request body over {config.max_body_bytes} bytes"}, status_code=413)
        try:
            reply = await checkers.check(bytes(body), request.headers.get("content-type", ""))
        except Busy:
            return JSONResponse({"detail": "every checker is busy; retry shortly"}, status_code=503,
                                headers={"Retry-After": "2"})
        if "internal" in reply:
            return JSONResponse({"detail": "internal error while checking the campaign"}, status_code=500)
        if not reply["ok"]:
            return JSONResponse({"detail": {"field": reply["field"], "error": reply["error"]}}, status_code=422)
        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(_queue, reply["name"], reply["kind"], reply["text"])

    def _queue(name: str, kind: Any, text: str) -> JSONResponse:
        with scheduler.lock:
            state = store.new(name, kind, text)
        return JSONResponse(Submitted(id=state.id, status=state.status).model_dump(), status_code=201)

    @app.get("/campaigns", response_model=CampaignList)
    def list_campaigns() -> CampaignList:
        """Every campaign, in queue order, with its progress."""
        return CampaignList(campaigns=[_summary(s) for s in store.all()])

    @app.get("/campaigns/{cid}", response_model=CampaignSummary, responses={404: {"model": Problem}})
    def get_campaign(cid: str) -> CampaignSummary:
        """Status, progress (evaluations, failures, budget) and the best value so far per objective column."""
        return _summary(_state(cid))

    @app.get("/campaigns/{cid}/front", responses={404: {"model": Problem}, 409: {"model": Problem}})
    def get_front(cid: str) -> Any:
        """The ranked Pareto front (``paretotune front --json``), with the all-shapes pick for several shapes."""
        _state(cid)
        from paretotune.errors import UserError

        try:
            doc = views.front(store.run_dir(cid))
        except UserError as exc:
            raise HTTPException(409, str(exc).replace(str(store.root), "<workdir>")) from None
        if doc is None:
            raise HTTPException(409, "no results stored yet")
        return doc

    @app.get("/campaigns/{cid}/points", responses={404: {"model": Problem}})
    def get_points(cid: str) -> Any:
        """Every evaluated candidate's objective values and whether it is on the front (the dashboard's plot)."""
        _state(cid)
        return views.points(store.run_dir(cid))

    @app.get("/campaigns/{cid}/artifacts", responses={404: {"model": Problem}})
    def list_artifacts(cid: str) -> dict[str, list[str]]:
        """Names of the run's ACF files and of what validation wrote (ACFs, pinned-config snippets)."""
        _state(cid)
        return {"artifacts": artifact_names(store.run_dir(cid))}

    @app.get("/campaigns/{cid}/artifacts/{name}", responses={404: {"model": Problem}},
             response_class=FileResponse)
    def get_artifact(cid: str, name: str) -> FileResponse:
        """One artifact by name (no folders: names with '/' or '..' are not artifacts)."""
        _state(cid)
        path = artifact_path(store.run_dir(cid), name)
        if path is None:
            raise HTTPException(404, f"no artifact '{name}'")
        return FileResponse(path, media_type="application/octet-stream" if name.endswith(".acf") else "text/plain",
                            filename=name)

    @app.post("/campaigns/{cid}/cancel", response_model=CampaignSummary,
              responses={404: {"model": Problem}, 415: {"model": Problem}},
              openapi_extra={"requestBody": {"required": False, "content": {
                  "application/json": {"schema": {"type": "object"}}}}})
    def cancel(cid: str) -> CampaignSummary:
        """Stop a running campaign (its whole process group) or drop a queued one; finished ones are unchanged.

        Send ``Content-Type: application/json`` (the body may be empty) or the token: a state change."""
        with scheduler.lock:
            state = scheduler.cancel(_state(cid))
        return _summary(state)

    @app.get("/campaigns/{cid}/report", response_class=HTMLResponse,
             responses={404: {"model": Problem}, 409: {"model": Problem}})
    def report(cid: str) -> HTMLResponse:
        """The run's self-contained HTML report (as ``paretotune report`` writes it)."""
        _state(cid)
        from paretotune.errors import UserError

        run = store.run_dir(cid)
        try:
            if views.front(run) is None:
                raise HTTPException(409, "no results stored yet")
            return HTMLResponse(views.report(run))
        except UserError as exc:
            raise HTTPException(409, str(exc).replace(str(store.root), "<workdir>")) from None

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def api_docs() -> HTMLResponse:
        """The API reference from the OpenAPI schema, as one page that needs no network."""
        from paretotune.service.api_docs import render_api_docs

        return HTMLResponse(render_api_docs(app.openapi()))

    @app.get("/", response_class=HTMLResponse)
    @app.get("/dashboard", response_class=HTMLResponse)
    async def dashboard() -> HTMLResponse:
        """Campaigns with live progress and the Pareto plot of the selected one (polls the API)."""
        from paretotune.service.dashboard import PAGE

        return HTMLResponse(PAGE)

    return app
