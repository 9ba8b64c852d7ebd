"""Issue 21, in process: Host/Origin/content-type refusals, endpoints and ACF paths in submitted campaigns,
operator limits, hostile bodies, and where a Ray campaign is allowed to connect.

Nothing here is ever queued: every submission is refused (the accepted Ray case is checked by
``check_campaign`` itself, and the scheduler's environment by a stand-in interpreter that records it).
"""
from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from paretotune.service.app import create_app
from paretotune.service.config import ServiceConfig, ServiceLimits
from paretotune.service.campaign_check import check_campaign
from tests.service.conftest import small_campaign

BASE = "http://127.0.0.1:8765"
TOKEN = "s3cret-token-0123456789"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    limits = ServiceLimits(max_workers=4, max_evaluations=500, max_shapes=2, max_name_chars=50)
    with TestClient(create_app(ServiceConfig(workdir=tmp_path / "work", limits=limits)), base_url=BASE) as c:
        yield c


def _campaign(**changes: object) -> dict:
    data = yaml.safe_load(small_campaign())
    for dotted, value in changes.items():
        *parents, key = dotted.split("__")
        node = data
        for p in parents:
            node = node.setdefault(p, {})
        node[key] = value
    return data


def _post(client: TestClient, data: dict | str, **headers: str) -> tuple[int, object]:
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    r = client.post("/campaigns", content=text, headers={"content-type": "application/yaml", **headers})
    return r.status_code, r.json()


@pytest.mark.parametrize(("headers", "status"), [
    ({"host": "evil.example:8765", "origin": "http://evil.example:8765", "content-type": "text/plain"}, 403),
    ({"host": "evil.example:8765", "content-type": "application/yaml"}, 403),  # DNS rebinding
    ({"host": "127.0.0.1.evil.example", "content-type": "application/yaml"}, 403),
    ({"origin": "http://evil.example", "content-type": "text/plain"}, 403),
    ({"origin": "http://evil.example", "content-type": "application/yaml"}, 403),
    ({"origin": "null", "content-type": "application/yaml"}, 403),
    ({"content-type": "text/plain"}, 415),
    ({"content-type": "application/x-www-form-urlencoded"}, 415),
    ({"content-type": "multipart/form-data; boundary=x"}, 415),
    ({}, 415),
])
def test_cross_site_submissions_are_refused(client: TestClient, headers: dict[str, str], status: int) -> None:
    r = client.post("/campaigns", content=small_campaign().encode(), headers=headers)
    assert r.status_code == status, r.text
    assert client.get("/campaigns").json() == {"campaigns": []}


@pytest.mark.parametrize("headers", [
    {"host": "localhost:8765"}, {"host": "[::1]:8765"}, {"host": "127.0.0.1"},
    {"origin": "http://127.0.0.1:8765"}, {"origin": "http://localhost:3000"},
])
def test_own_names_pass_the_guard(client: TestClient, headers: dict[str, str]) -> None:
    status, body = _post(client, _campaign(search__pool_size=0), **headers)
    assert status == 422 and body["detail"]["field"] == "search.pool_size", body  # reached validation


def test_reads_need_an_own_host_name_too(client: TestClient) -> None:
    assert client.get("/campaigns", headers={"host": "evil.example"}).status_code == 403
    assert client.get("/healthz", headers={"host": "rebound.example:8765"}).status_code == 403
    assert client.get("/healthz").status_code == 200


def test_cancel_needs_a_body_type_or_the_token(tmp_path: Path, client: TestClient) -> None:
    assert client.post("/campaigns/000001-abcdef12/cancel").status_code == 415
    assert client.post("/campaigns/000001-abcdef12/cancel", headers={"content-type": "text/plain"}).status_code == 415
    assert client.post("/campaigns/000001-abcdef12/cancel", json={}).status_code == 404
    app = create_app(ServiceConfig(workdir=tmp_path / "t", token=TOKEN))
    with TestClient(app, base_url=BASE) as c:
        bearer = {"authorization": f"Bearer {TOKEN}"}
        assert c.post("/campaigns/000001-abcdef12/cancel").status_code == 401
        assert c.post("/campaigns/000001-abcdef12/cancel", headers=bearer).status_code == 404
        rebound = {**bearer, "host": "evil.example"}
        assert c.post("/campaigns/000001-abcdef12/cancel", headers=rebound).status_code == 403


def test_allowed_host_names_are_the_operators(tmp_path: Path) -> None:
    app = create_app(ServiceConfig(workdir=tmp_path / "w", allowed_hosts=("tuner.lab",)))
    with TestClient(app, base_url="http://tuner.lab:8765") as c:
        assert c.get("/campaigns").status_code == 200
        assert c.get("/campaigns", headers={"host": "other.lab"}).status_code == 403


@pytest.mark.parametrize(("changes", "field"), [
    ({"execution": {"backend": "ray", "address": "127.0.0.1:18999"}}, "execution.address"),
    ({"execution": {"backend": "local", "address": "auto"}}, "execution.address"),
    ({"execution": {"backend": "ray", "address": "ray://head.example:10001"}}, "execution.address"),
    ({"name": "http://evil.example/x"}, "name"),
    ({"name": "10.1.2.3:6379"}, "name"),
    ({"name": "192.168.0.7"}, "name"),
    ({"shapes": [{"name": "w", "M": 64, "N": 128, "dtype": "float16", "host": "x"}]}, "shapes[0].host"),
    ({"objectives": ["registers", {"name": "ncu_metric", "metric": "tcp://h:1", "direction": "min"}]},
     "objectives[1].metric"),
    ({"evaluation": {"workers": 2, "url": "x"}}, "evaluation.url"),
])
def test_campaigns_naming_a_network_endpoint_are_refused(client: TestClient, changes: dict, field: str) -> None:
    data = _campaign()
    data.update(changes)
    status, body = _post(client, data)
    assert status == 422, body
    assert body["detail"]["field"] == field
    assert "may not name a network address" in body["detail"]["error"]
    assert client.get("/campaigns").json() == {"campaigns": []}


@pytest.mark.parametrize("name", ["../../../tmp/x", "/etc/passwd", "a\x00b", "two\nlines", ".."])
def test_a_name_that_cannot_name_a_folder_is_refused(client: TestClient, name: str) -> None:
    """The CLI's name rule (campaign/schema.py): a client chooses the name, never where anything is written."""
    status, body = _post(client, _campaign(name=name))
    assert status == 422, body
    assert body["detail"]["field"] == "name" and "must not contain" in body["detail"]["error"], body
    assert client.get("/campaigns").json() == {"campaigns": []}


def test_ray_only_with_the_operators_address(client: TestClient, tmp_path: Path) -> None:
    status, body = _post(client, _campaign(execution={"backend": "ray"}))
    assert status == 422 and body["detail"]["field"] == "execution.backend", body
    assert "serve --ray-address" in body["detail"]["error"]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    text = yaml.safe_dump(_campaign(execution={"backend": "ray"}))
    config = ServiceConfig(workdir=tmp_path / "w", ray_address="10.0.0.5:6379")
    assert check_campaign(text, scratch, config).kind == "static"


def test_campaign_processes_get_the_operators_ray_address_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler sets RAY_ADDRESS for a campaign process from its own config (and clears an inherited one);
    a stand-in interpreter records the environment it was started with."""
    from paretotune.service.queue import Scheduler
    from paretotune.service.store import CampaignStore

    recorder = tmp_path / "record-env"
    recorder.write_text('#!/bin/sh\nenv > "$PWD/env.txt"\n')
    recorder.chmod(recorder.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("RAY_ADDRESS", "inherited.example:6379")
    for ray_address, expect in (("10.0.0.5:6379", "10.0.0.5:6379"), (None, None)):
        work = tmp_path / f"w{expect}"
        store = CampaignStore(work)
        config = ServiceConfig(workdir=work, python=str(recorder), ray_address=ray_address)
        sched = Scheduler(store, config)
        state = store.new("r", "static", small_campaign())
        sched.tick()
        proc = sched._procs[state.id]
        proc.wait(timeout=30)
        env = dict(line.split("=", 1) for line in (store.folder(state.id) / "env.txt").read_text().splitlines()
                   if "=" in line)
        assert env.get("RAY_ADDRESS") == expect
        sched.shutdown()


def test_acf_paths_get_one_answer_whether_or_not_they_exist(client: TestClient) -> None:
    answers = []
    for acf in ({"files": ["/etc/shadow"]}, {"files": ["/etc/nonexistent_file"]}, {"files": ["/etc/passwd"]},
                {"files": ["../../../../etc/hostname"]}, {"files": ["/nonexistent/x.acf"]}):
        status, body = _post(client, _campaign(acf=acf))
        assert status == 422
        answers.append(body)
    assert all(a == answers[0] for a in answers), answers
    assert answers[0]["detail"]["field"] == "acf.files"
    pack = [_post(client, _campaign(acf={"pack": p}))[1] for p in ("/etc/shadow", "/etc/nonexistent.zip")]
    assert pack[0] == pack[1] and pack[0]["detail"]["field"] == "acf.pack"


@pytest.mark.parametrize(("changes", "field", "limit"), [
    ({"evaluation__workers": 256}, "evaluation.workers", "limit of 4 (serve --max-workers)"),
    ({"search__generations": 10000, "search__pool_size": 4096}, "search",
     "40960000 search.generations × search.pool_size evaluations is over this server's limit of 500"),
    ({"shapes": [{"name": f"s{i}", "M": 64, "N": 128, "dtype": "float16"} for i in range(3)],
      "search__pool_size": 30}, "shapes",
     "limit of 2 (serve --max-shapes)"),
    # within the schema's bounds (a day, a week), over the server's default limits (600 s, a day)
    ({"evaluation__compile_timeout_s": 3600}, "evaluation.compile_timeout_s", "(serve --max-timeout-s)"),
    ({"search__wall_clock_s": 2 * 86400}, "search.wall_clock_s", "(serve --max-wall-clock-s)"),
    ({"evaluation__gpu_spares": 8}, "evaluation.gpu_spares", "limit of 3"),
    ({"name": "n" * 60}, "name", "60 characters is over this server's limit of 50 (serve --max-name-chars)"),
])
def test_budgets_over_the_operators_limits_are_refused(client: TestClient, changes: dict, field: str,
                                                       limit: str) -> None:
    status, body = _post(client, _campaign(**changes))
    assert status == 422, body
    assert body["detail"]["field"] == field and limit in body["detail"]["error"], body
    assert client.get("/campaigns").json() == {"campaigns": []}


def test_deeply_nested_bodies_are_422_not_500(client: TestClient) -> None:
    deep_json = "[" * 100_000 + "]" * 100_000
    r = client.post("/campaigns", content=('{"name": ' + deep_json + "}").encode(),
                    headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    deep_yaml = "name: " + "[" * 60_000 + "]" * 60_000 + "\n"
    status, body = _post(client, deep_yaml)
    assert status == 422, body
    assert client.get("/healthz").status_code == 200


def test_one_app_per_workdir_and_the_lock_goes_with_it(tmp_path: Path) -> None:
    from paretotune.errors import UserError
    from paretotune.service.lock import WorkdirLock

    work = tmp_path / "work"
    with TestClient(create_app(ServiceConfig(workdir=work)), base_url=BASE):
        with pytest.raises(UserError, match="another paretotune server"):
            WorkdirLock(work).acquire()
        with pytest.raises(UserError, match="another paretotune server"):
            with TestClient(create_app(ServiceConfig(workdir=work)), base_url=BASE):
                pass
    WorkdirLock(work).acquire().release()  # released when the app stopped
