"""A real ``paretotune serve`` in a subprocess on 127.0.0.1, and small copies of the CPU quickstart."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "configs" / "quickstart.yaml"


def small_campaign(generations: int = 1, pool_size: int = 10, name: str | None = None) -> str:
    """The CPU quickstart with a tiny budget (generations × pool_size + 1 baseline evaluations)."""
    data = yaml.safe_load(QUICKSTART.read_text())
    data["search"].update(generations=generations, pool_size=pool_size)
    if name:
        data["name"] = name
    return yaml.safe_dump(data, sort_keys=False)


def group_alive(pgid: int) -> bool:
    """True while any process of process group ``pgid`` is alive (read from /proc)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                    return True
            except (OSError, IndexError):
                continue
    return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One server process; :meth:`kill` is SIGKILL (as a crash), :meth:`stop` a clean SIGTERM."""

    def __init__(self, workdir: Path, *extra: str, cwd: Path = ROOT) -> None:
        self.workdir, self.extra = workdir, extra
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir.parent / f"server-{self.port}.log"
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.setdefault("CIQ_SEARCH_SPACES_DIR", str(ROOT.parent / "shared" / "compileiq"))
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "paretotune.cli", "serve", "--port", str(self.port),
                                          "--workdir", str(workdir), *extra], cwd=cwd, env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        self.client = httpx.Client(base_url=self.url, timeout=30)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if self.client.get("/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "server did not come up in 60 s"
            time.sleep(0.2)

    def submit(self, text: str) -> str:
        r = self.client.post("/campaigns", content=text, headers={"content-type": "application/yaml"})
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    def status(self, cid: str) -> dict[str, Any]:
        r = self.client.get(f"/campaigns/{cid}")
        assert r.status_code == 200, r.text
        return dict(r.json())

    def wait(self, cid: str, until: Callable[[dict[str, Any]], bool], limit_s: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + limit_s
        while True:
            st = self.status(cid)
            if until(st):
                return st
            assert time.monotonic() < deadline, f"timed out waiting on {cid}: {st}\n{self.log.read_text()[-2000:]}"
            time.sleep(0.25)

    def kill(self) -> None:
        self.client.close()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(*extra: str, workdir: Path | None = None, cwd: Path = ROOT) -> Server:
        server = Server(workdir or tmp_path / "work", *extra, cwd=cwd)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
