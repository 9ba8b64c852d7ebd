"""The API's refusals, in process (no campaign ever starts): 422 naming the field, 413, 401, 404, paths.

Every submission here is invalid, so the scheduler never launches anything; the valid path runs end to end
in test_service_e2e.py.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from paretotune.errors import UserError
from paretotune.service.app import create_app
from paretotune.service.config import ServiceConfig, is_loopback
from tests.service.conftest import small_campaign

TOKEN = "s3cret-token-0123456789"
BASE = "http://127.0.0.1:8765"  # the server refuses Host names that are not its own (TestClient's is 'testserver')


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(ServiceConfig(workdir=tmp_path / "work")), base_url=BASE) as c:
        yield c


def _post_yaml(client: TestClient, data: dict | str) -> tuple[int, dict]:
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    r = client.post("/campaigns", content=text, headers={"content-type": "application/yaml"})
    return r.status_code, r.json()


def _quick(**changes: object) -> dict:
    data = yaml.safe_load(small_campaign())
    for dotted, value in changes.items():
        *parents, key = dotted.split("__")
        node = data
        for p in parents:
            node = node[p]
        node[key] = value
    return data


@pytest.mark.parametrize(("changes", "field", "words"), [
    ({"kernel__source": "os:system"}, "kernel.source", "outside the server's import roots"),
    ({"kernel__source": "paretotune.kernels.registry:adapter_for"}, "kernel.source", "import roots"),
    ({"kernel__source": "/etc/passwd.py:x"}, "kernel.source", "kernel folders"),
    ({"kernel__source": "../../x.py:k"}, "kernel.source", "kernel folders"),
    ({"kernel__source": "paretotune.kernels.bundled.softmax:nope"}, "kernel.source", "no attribute 'nope'"),
    ({"objectives": ["registers", "registerz"]}, "objectives[1].name", "unknown objective 'registerz'"),
    ({"search__pool_size": 0}, "search.pool_size", ""),
    ({"search__enigne": "random"}, "search.enigne", "unknown field"),
    ({"acf": {"files": ["/etc/passwd"]}}, "acf.files", ""),
    ({"objectives": ["runtime"]}, "objectives", "no GPU"),
    ({"shapes": [{"name": "x", "M": 4096}]}, "shapes[0]", "cannot make inputs"),
])
def test_invalid_campaign_is_422_naming_the_field(client: TestClient, changes: dict, field: str, words: str) -> None:
    status, body = _post_yaml(client, _quick(**changes))
    assert status == 422, body
    assert body["detail"]["field"] == field, body
    assert words in body["detail"]["error"]
    assert "/work" not in body["detail"]["error"] or "kernel folders" in body["detail"]["error"]
    assert client.get("/campaigns").json() == {"campaigns": []}  # nothing queued


def test_json_body_validates_like_yaml(client: TestClient) -> None:
    r = client.post("/campaigns", json=_quick(search__pool_size=-3))
    assert r.status_code == 422 and r.json()["detail"]["field"] == "search.pool_size"
    r = client.post("/campaigns", content=b"[1, 2]", headers={"content-type": "application/json"})
    assert r.status_code == 422 and "JSON object" in r.json()["detail"]["error"]
    r = client.post("/campaigns", content=b"{bad", headers={"content-type": "application/json"})
    assert r.status_code == 422


def test_bad_yaml_empty_and_binary_bodies(client: TestClient) -> None:
    assert _post_yaml(client, "a: [1,\n")[0] == 422
    status, body = _post_yaml(client, "")
    assert status == 422 and "empty" in body["detail"]["error"]
    status, body = _post_yaml(client, small_campaign() + "name: twice\n")
    assert status == 422 and "duplicate key" in body["detail"]["error"]
    r = client.post("/campaigns", content=b"\xff\xfe\x00", headers={"content-type": "application/yaml"})
    assert r.status_code == 422


def test_request_size_limit(tmp_path: Path) -> None:
    with TestClient(create_app(ServiceConfig(workdir=tmp_path / "w", max_body_bytes=1000)), base_url=BASE) as c:
        r = c.post("/campaigns", content=b"x" * 1001, headers={"content-type": "application/yaml"})
        assert r.status_code == 413

        def chunks() -> Iterator[bytes]:  # no Content-Length: the limit is enforced while reading
            for _ in range(20):
                yield b"y" * 100

        r = c.post("/campaigns", content=chunks(), headers={"content-type": "application/yaml"})
        assert r.status_code == 413


def test_unknown_ids_and_artifact_names_stay_inside_the_workdir(client: TestClient, tmp_path: Path) -> None:
    for path in ("/campaigns/nope", "/campaigns/000001-abcdef12", "/campaigns/..%2F..%2Fetc/front",
                 "/campaigns/000001-abcdef12/report", "/campaigns/000001-abcdef12/artifacts/x.acf"):
        assert client.get(path).status_code == 404, path
    assert client.post("/campaigns/000001-abcdef12/cancel", json={}).status_code == 404
    from paretotune.service.progress import artifact_path

    run = tmp_path / "run"
    (run / "acf").mkdir(parents=True)
    (run / "acf" / "a.acf").write_bytes(b"acf")
    (run / "acf" / "a.json").write_text("{}")
    (run / "run.json").write_text("{}")
    assert artifact_path(run, "a.acf") == (run / "acf" / "a.acf").resolve()
    for name in ("../run.json", "..", "a.json", "/etc/passwd", ".lock", "acf/a.acf", "..a.acf"):
        assert artifact_path(run, name) is None, name


def test_front_and_report_before_any_result_are_409(tmp_path: Path) -> None:
    from paretotune.service.store import CampaignStore

    store = CampaignStore(tmp_path / "w")
    state = store.new("x", "gpu", small_campaign())  # gpu: a server without GPUs never starts it
    with TestClient(create_app(ServiceConfig(workdir=tmp_path / "w")), base_url=BASE) as c:
        assert c.get(f"/campaigns/{state.id}").json()["status"] == "queued"
        assert c.get(f"/campaigns/{state.id}/front").status_code == 409
        assert c.get(f"/campaigns/{state.id}/report").status_code == 409
        assert c.get(f"/campaigns/{state.id}/points").json()["points"] == []
        assert c.get(f"/campaigns/{state.id}/artifacts").json() == {"artifacts": []}


def test_non_loopback_needs_a_token() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.2") and not is_loopback("example.com")
    with pytest.raises(UserError, match="needs a token"):
        ServiceConfig(workdir=Path("."), host="0.0.0.0").check()
    with pytest.raises(UserError, match="16 characters"):
        ServiceConfig(workdir=Path("."), host="0.0.0.0", token="short", allowed_hosts=("gpu-box",)).check()
    with pytest.raises(UserError, match="--allow-host"):  # a wildcard bind has no name of its own to check Host against
        ServiceConfig(workdir=Path("."), host="0.0.0.0", token=TOKEN).check()
    ServiceConfig(workdir=Path("."), host="0.0.0.0", token=TOKEN, allowed_hosts=("gpu-box",)).check()


def test_token_is_required_on_every_api_endpoint(tmp_path: Path) -> None:
    # an in-process client: the config says 0.0.0.0, but nothing binds any address
    app = create_app(ServiceConfig(workdir=tmp_path / "w", host="0.0.0.0", token=TOKEN, allowed_hosts=("gpu-box",)))
    with TestClient(app, base_url="http://gpu-box:8765") as c:
        for method, path in (("GET", "/campaigns"), ("GET", "/openapi.json"), ("POST", "/campaigns"),
                             ("GET", "/campaigns/000001-abcdef12/front"),
                             ("POST", "/campaigns/000001-abcdef12/cancel")):
            assert c.request(method, path).status_code == 401, path
            assert c.request(method, path,
                             headers={"authorization": "Bearer wrong-token-0123456789"}).status_code == 401
            assert c.request(method, path, headers={"authorization": TOKEN}).status_code == 401
        ok = {"authorization": f"Bearer {TOKEN}"}
        assert c.get("/campaigns", headers=ok).status_code == 200
        assert c.get("/openapi.json", headers=ok).status_code == 200
        assert c.get("/").status_code == 200  # the page itself holds no data; its requests carry the token


def test_openapi_lists_the_endpoints(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    for p in ("/campaigns", "/campaigns/{cid}", "/campaigns/{cid}/front", "/campaigns/{cid}/artifacts/{name}",
              "/campaigns/{cid}/cancel", "/campaigns/{cid}/report"):
        assert p in paths, p
    assert set(paths["/campaigns"]["post"]["requestBody"]["content"]) == {"application/json", "application/yaml"}
    json.dumps(spec)


def test_slots_one_campaign_per_gpu_and_static_concurrency(tmp_path: Path) -> None:
    from paretotune.service.queue import Scheduler
    from paretotune.service.store import CampaignStore

    store = CampaignStore(tmp_path / "w")
    sched = Scheduler(store, ServiceConfig(workdir=tmp_path / "w", gpus=("0", "3"), static_concurrency=2))
    gpu = store.new("g", "gpu", "x")
    static = store.new("s", "static", "x")
    assert sched._free_slot(gpu, set()) == "0"
    assert sched._free_slot(gpu, {"0"}) == "3"
    assert sched._free_slot(gpu, {"0", "3", "cpu0", "cpu1"}) is None
    assert sched._free_slot(static, {"0", "3"}) == "cpu0"
    assert sched._free_slot(static, {"cpu0"}) == "cpu1"
    assert sched._free_slot(static, {"cpu0", "cpu1"}) is None


def test_restart_requeues_running_and_keeps_finished(tmp_path: Path) -> None:
    """What a new server does with the states an old one left (no processes involved: the pid is gone)."""
    from paretotune.service.queue import Scheduler
    from paretotune.service.store import CampaignStore

    store = CampaignStore(tmp_path / "w")
    running, cancelling, done = (store.new(n, "static", "x") for n in ("r", "c", "d"))
    for state, status in ((running, "running"), (cancelling, "running"), (done, "done")):
        state.status, state.pid = status, 2**22 + 7  # above any pid_max default: no such process group
    cancelling.cancel_requested = True
    for state in (running, cancelling, done):
        store.save(state)
    reopened = CampaignStore(tmp_path / "w")
    assert Scheduler(reopened, ServiceConfig(workdir=tmp_path / "w")).recover() == [running.id, cancelling.id]
    assert [s.status for s in CampaignStore(tmp_path / "w").all()] == ["queued", "cancelled", "done"]


def test_docs_page_renders_offline_and_the_dashboard_links_each_campaign(client: TestClient) -> None:
    """/docs is one page with no external script or style (FastAPI's loads from a CDN); the dashboard links
    each campaign's report, front and artifacts, and takes a campaign file."""
    page = client.get("/docs")
    assert page.status_code == 200
    text = page.text
    assert "/campaigns/{cid}/front" in text and "application/yaml" in text
    assert "<script" not in text and "http://" not in text and "https://" not in text and "cdn" not in text.lower()
    assert client.get("/redoc").status_code == 404
    dash = client.get("/").text
    for tail in ("/report", "/front", "/artifacts"):
        assert f'["{tail[1:]}", "{tail}"]' in dash
    assert 'id="campaign-file"' in dash and 'method: "POST"' in dash
