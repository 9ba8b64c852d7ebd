"""Issue 21 against a real ``paretotune serve`` on loopback: what is about the process or the socket.

Cross-site and endpoint-naming submissions refused over real HTTP; 50 billion-laughs bodies at once leave
``/healthz`` answering at once; a second server on the same work directory refuses to start; SIGTERM stops a
server with a running campaign and hostile checks in flight within seconds, and the campaign resumes on
restart; bad ports are one-line errors with exit code 2.
"""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests.service.conftest import ROOT, Server, group_alive, small_campaign

LAUGHS = "\n".join([
    'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
    *(f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi")),
    "kernel: {source: 'paretotune.kernels.bundled.softmax:triton_softmax'}",
    "shapes: *i", "objectives: *i", ""])


def _env() -> dict[str, str]:
    import os

    return dict(os.environ, PYTHONPATH=str(ROOT))


def _serve(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "paretotune.cli", "serve", *args], capture_output=True, text=True,
                          timeout=timeout, env=_env(), cwd=ROOT, check=False)


def _rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]



FLOOD = """
import asyncio, json, sys
import httpx

async def main(url, n, body):
    async with httpx.AsyncClient(timeout=240, limits=httpx.Limits(max_connections=n)) as c:
        async def one():
            try:
                r = await c.post(url + "/campaigns", content=body, headers={"content-type": "application/yaml"})
                return [r.status_code, r.json()]
            except httpx.HTTPError as exc:
                return repr(exc)
        print(json.dumps(await asyncio.gather(*(one() for _ in range(n)))))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.stdin.read()))
"""


def _flood(url: str, n: int) -> subprocess.Popen[str]:
    """``n`` billion-laughs submissions at once, from another process (the timing here shares no GIL with
    them); its stdout is the list of [status, body] answers."""
    proc = subprocess.Popen([sys.executable, "-c", FLOOD, url, str(n)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=_env())
    assert proc.stdin is not None
    proc.stdin.write(LAUGHS)
    proc.stdin.close()
    return proc


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("svc") / "work", "--check-timeout", "2")
    yield s
    s.stop()


def test_cross_origin_text_plain_post_is_refused(server: Server) -> None:
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{server.url}/campaigns", content=small_campaign(),
                   headers={"content-type": "text/plain", "origin": "http://evil.example",
                            "host": f"evil.example:{server.port}"})
        assert r.status_code == 403, r.text
        r = c.post(f"{server.url}/campaigns", content=small_campaign(),
                   headers={"content-type": "text/plain", "origin": "http://evil.example"})
        assert r.status_code == 403, r.text
        r = c.post(f"{server.url}/campaigns", content=small_campaign(), headers={"content-type": "text/plain"})
        assert r.status_code == 415, r.text
    assert server.client.get("/campaigns").json() == {"campaigns": []}


@pytest.mark.parametrize("execution", [{"backend": "ray", "address": "127.0.0.1:18999"},
                                       {"backend": "ray", "address": "ray://10.0.0.9:10001"},
                                       {"backend": "ray"}])
def test_campaign_naming_a_ray_address_or_host_is_refused(server: Server, execution: dict) -> None:
    """Nothing listens on 127.0.0.1:18999: a server that tried to connect would hang or fail, not answer 422."""
    data = yaml.safe_load(small_campaign())
    data["execution"] = execution
    r = server.client.post("/campaigns", content=yaml.safe_dump(data), headers={"content-type": "application/yaml"})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail["field"] in ("execution.address", "execution.backend"), detail
    assert "serve --ray-address" in detail["error"]
    assert server.client.get("/campaigns").json() == {"campaigns": []}


def test_fifty_billion_laughs_leave_healthz_answering(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as probe:
        assert probe.get("/healthz").status_code == 200  # connection open before the flood
        flood = _flood(server.url, 50)
        time.sleep(1.5)  # all 50 sent and being checked; time /healthz until every submission is answered
        took: list[float] = []
        deadline = time.monotonic() + 240
        while (flood.poll() is None or len(took) < 5) and time.monotonic() < deadline:
            start = time.perf_counter()
            r = probe.get("/healthz")
            took.append(time.perf_counter() - start)
            assert r.status_code == 200
            time.sleep(0.05)
        assert max(took) < 0.1, f"/healthz took up to {max(took) * 1000:.0f} ms ({len(took)} probes)"
        assert probe.get("/campaigns").status_code == 200
    assert flood.wait(timeout=60) == 0 and flood.stdout is not None
    results = json.loads(flood.stdout.read())
    assert len(results) == 50 and all(isinstance(x, list) for x in results), results
    statuses = [x[0] for x in results]
    assert set(statuses) <= {422, 503} and 422 in statuses, statuses
    assert server.client.get("/campaigns").json() == {"campaigns": []}


def _children(pid: int, marker: str) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmdline = (entry / "cmdline").read_bytes()
            except (OSError, IndexError):
                continue
            if ppid == pid and marker.encode() in cmdline:
                out.append(int(entry.name))
    return out


def test_the_default_checkers_follow_the_cores(start_server: Callable[..., Server]) -> None:
    """The 2026-12-01 audit: one checker by default, whatever the machine. Now one per usable core (at most
    8): a burst of slow checks (each imports the kernel, then refuses a shape key) starts that many."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    cores = min(8, len(os.sched_getaffinity(0)))
    server = start_server()
    data = yaml.safe_load(small_campaign())
    data["shapes"] = [{"name": "w", "M": 64, "N": 64, "dtyp": "float16"}]
    body = yaml.safe_dump(data)

    def post(_: int) -> int:
        with httpx.Client(base_url=server.url, timeout=120) as c:
            return c.post("/campaigns", content=body, headers={"content-type": "application/yaml"}).status_code

    with ThreadPoolExecutor(2 * cores) as pool:
        statuses = list(pool.map(post, range(2 * cores)))
    assert statuses == [422] * (2 * cores), statuses
    assert len(_children(server.proc.pid, "paretotune.service.check_worker")) == cores


def test_second_server_on_one_workdir_refuses_to_start(start_server: Callable[..., Server], tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    first = start_server(workdir=workdir)
    second = _serve("--workdir", str(workdir), "--port", "0")
    assert second.returncode == 2, second
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "another paretotune server" in lines[0] and str(first.proc.pid) in lines[0], lines
    assert "Traceback" not in second.stdout + second.stderr
    assert first.client.get("/healthz").status_code == 200
    first.stop()
    assert start_server(workdir=workdir).client.get("/healthz").status_code == 200  # the lock went with it


def test_sigterm_stops_the_server_in_seconds_and_the_campaign_resumes(start_server: Callable[..., Server],
                                                                       tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    server = start_server("--check-timeout", "60", workdir=workdir)
    cid = server.submit(small_campaign(generations=2))
    budget = 21
    server.wait(cid, lambda s: s["status"] == "running" and s["progress"]["evaluated"] >= 2)
    pgid = json.loads((workdir / "campaigns" / cid / "state.json").read_text())["pid"]
    flood = _flood(server.url, 8)  # checks that would run for a minute each
    time.sleep(1.0)
    start = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    server.proc.wait(timeout=30)
    took = time.monotonic() - start
    assert took < 8, f"SIGTERM took {took:.1f} s"
    deadline = time.monotonic() + 10
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not group_alive(pgid), "the campaign outlived the server"
    flood.wait(timeout=30)  # every submission answered or cut off: none hangs
    run = workdir / "campaigns" / cid / "run"
    before = _rows(run)
    assert json.loads((workdir / "campaigns" / cid / "state.json").read_text())["status"] == "running"

    server = start_server(workdir=workdir)
    st = server.wait(cid, lambda s: s["status"] in ("done", "failed", "cancelled"), limit_s=240)
    assert st["status"] == "done", st
    after = _rows(run)
    ids = [r["candidate_id"] for r in after]
    twins = sum("twin_of" in (r.get("extra") or {}) for r in after)  # added after the search, for attribution
    assert len(ids) == len(set(ids)) == budget + twins, "an evaluation was lost or repeated"
    assert st["progress"]["evaluated"] == budget
    assert after[:len(before)] == before


def test_bad_port_is_one_line_exit_2(tmp_path: Path) -> None:
    done = _serve("--port", "99999999", "--workdir", str(tmp_path / "w"))
    assert done.returncode == 2, done
    assert done.stderr.strip().count("\n") == 0 and "--port 99999999" in done.stderr, done.stderr
    assert not (tmp_path / "w").exists()  # refused before anything was made
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = _serve("--port", str(port), "--workdir", str(tmp_path / "w2"))
    assert done.returncode == 2, done
    assert done.stderr.strip().count("\n") == 0 and f"--port {port}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
