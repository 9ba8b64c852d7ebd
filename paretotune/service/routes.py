"""The API's routes, registered in groups on the app that :func:`~paretotune.service.app.create_app` makes: the
queue (submit, list, one campaign's status), one campaign's run (front, points, artifacts, cancel, report) and
the pages (health, API reference, dashboard). The response models are here, with the routes that return them.

Handlers that read files are plain ``def`` functions, so FastAPI runs them in its thread pool (see
:mod:`~paretotune.service.app`); the handlers' docstrings are the API reference's descriptions.
"""
from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from pydantic import BaseModel

from paretotune.service.checkers import Busy, CheckerPool
from paretotune.service.config import ServiceConfig
from paretotune.service.progress import RunView, artifact_names, artifact_path, budget_of
from paretotune.service.queue import Scheduler
from paretotune.service.store import CampaignState, CampaignStore


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


class Campaigns:
    """What the campaign routes share: the store, the scheduler, the run views and each campaign's budget."""

    def __init__(self, store: CampaignStore, scheduler: Scheduler, views: RunView) -> None:
        self.store, self.scheduler, self.views = store, scheduler, views
        self.budgets: dict[str, int] = {}

    def state(self, cid: str) -> CampaignState:
        """The campaign's state; 404 if there is none."""
        state = self.store.get(cid)
        if state is None:
            raise HTTPException(404, f"no campaign '{cid}'")
        return state

    def summary(self, state: CampaignState) -> CampaignSummary:
        if state.id not in self.budgets:
            try:
                self.budgets[state.id] = budget_of((self.store.folder(state.id) / "campaign.yaml").read_text("utf-8"))
            except OSError:
                self.budgets[state.id] = 0
        progress = self.views.progress(self.store.run_dir(state.id), self.budgets[state.id])
        return CampaignSummary(id=state.id, seq=state.seq, name=state.name, kind=state.kind, status=state.status,
                               submitted=state.submitted, started=state.started, finished=state.finished,
                               attempts=state.attempts, returncode=state.returncode, error=state.error,
                               progress=progress)

    def queue(self, name: str, kind: Any, text: str) -> JSONResponse:
        with self.scheduler.lock:
            state = self.store.new(name, kind, text)
        return JSONResponse(Submitted(id=state.id, status=state.status).model_dump(), status_code=201)


def add_queue_routes(app: FastAPI, campaigns: Campaigns, checkers: CheckerPool, config: ServiceConfig) -> None:
    """``/campaigns``: submit (checked in a checker process, :mod:`.checkers`) and list; one campaign's status."""

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

        return await run_in_threadpool(campaigns.queue, reply["name"], reply["kind"], reply["text"])

    @app.get("/campaigns", response_model=CampaignList)
    def list_campaigns() -> CampaignList:
        """Every campaign, in queue order, with its progress."""
        return CampaignList(campaigns=[campaigns.summary(s) for s in campaigns.store.all()])

    @app.get("/campaigns/{cid}", response_model=CampaignSummary, responses={404: {"model": Problem}})
    def get_campaign(cid: str) -> CampaignSummary:
        """Status, progress (evaluations, failures, budget) and the best value so far per objective column."""
        return campaigns.summary(campaigns.state(cid))


def add_run_routes(app: FastAPI, campaigns: Campaigns) -> None:
    """``/campaigns/{cid}/...``: what the campaign's run holds (front, points, artifacts, report); cancelling it."""
    store, views = campaigns.store, campaigns.views

    @app.get("/campaigns/{cid}/front", responses={404: {"model": Problem}, 409: {"model": Problem}})
    def get_front(cid: str) -> Any:
        """The ranked Pareto front (``paretotune front --json``), with the all-shapes pick for several shapes."""
        campaigns.state(cid)
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
        campaigns.state(cid)
        return views.points(store.run_dir(cid))

    @app.get("/campaigns/{cid}/artifacts", responses={404: {"model": Problem}})
    def list_artifacts(cid: str) -> dict[str, list[str]]:
        """Names of the run's ACF files and of what validation wrote (ACFs, pinned-config snippets)."""
        campaigns.state(cid)
        return {"artifacts": artifact_names(store.run_dir(cid))}

    @app.get("/campaigns/{cid}/artifacts/{name}", responses={404: {"model": Problem}},
             response_class=FileResponse)
    def get_artifact(cid: str, name: str) -> FileResponse:
        """One artifact by name (no folders: names with '/' or '..' are not artifacts)."""
        campaigns.state(cid)
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
        with campaigns.scheduler.lock:
            state = campaigns.scheduler.cancel(campaigns.state(cid))
        return campaigns.summary(state)

    @app.get("/campaigns/{cid}/report", response_class=HTMLResponse,
             responses={404: {"model": Problem}, 409: {"model": Problem}})
    def report(cid: str) -> HTMLResponse:
        """The run's self-contained HTML report (as ``paretotune report`` writes it)."""
        campaigns.state(cid)
        from paretotune.errors import UserError

        run = store.run_dir(cid)
        try:
            if views.front(run) is None:
                raise HTTPException(409, "no results stored yet")
            return HTMLResponse(views.report(run))
        except UserError as exc:
            raise HTTPException(409, str(exc).replace(str(store.root), "<workdir>")) from None


def add_pages(app: FastAPI) -> None:
    """The pages: ``/healthz``, the offline API reference (``/docs``) and the dashboard (``/``, ``/dashboard``)."""

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
