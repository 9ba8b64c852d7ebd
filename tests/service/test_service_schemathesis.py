"""schemathesis fuzzes every operation of the OpenAPI schema in process: no request may get a 5xx answer.

The app runs without its lifespan here, so the scheduler never starts and nothing a fuzzed request might
queue would run; every campaign body it can make is refused by validation anyway.
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from paretotune.service.app import create_app
from paretotune.service.config import ServiceConfig

WORKDIR = Path(tempfile.mkdtemp(prefix="paretotune-schemathesis-"))
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)
# schemathesis calls the app as Host 'testserver' (Starlette's test client); the server refuses names it was not given
schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(ServiceConfig(workdir=WORKDIR,
                                                                                  allowed_hosts=("testserver",))))


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=[not_a_server_error])
