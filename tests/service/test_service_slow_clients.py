"""Issue 45, defect 6: slow clients against a real ``paretotune serve`` on loopback.

Slow sockets come from 127.0.0.2 (any 127.x address is loopback on Linux), so that 127.0.0.1 is another
client: the per-address cap must not lock it out. Short limits keep the test to a few seconds.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.service.conftest import ROOT, Server

REQUEST_TIMEOUT_S = 2.0
IDLE_TIMEOUT_S = 1.0
CAP = 20
SLOW_PEER = "127.0.0.2"
START = (b"", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n",
         b"POST /campaigns HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/yaml\r\n"
         b"Content-Length: 1000\r\n\r\n")
LIMITS = ("--request-timeout", str(REQUEST_TIMEOUT_S), "--idle-timeout", str(IDLE_TIMEOUT_S),
          "--max-client-connections", str(CAP))


def _connect(port: int, source: str = SLOW_PEER) -> socket.socket:
    sock = socket.socket()
    sock.bind((source, 0))
    sock.settimeout(5)
    sock.connect(("127.0.0.1", port))
    return sock


def _closed_by_server(sock: socket.socket) -> bytes | None:
    """What the server sent before closing ``sock`` (b"" for a bare close), or None while it is still open."""
    sock.setblocking(False)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except BlockingIOError:
        return None
    except ConnectionResetError:
        pass
    return received


def _request(sock: socket.socket, path: str = "/healthz") -> bytes:
    """One keep-alive GET on ``sock``; the whole answer (head and Content-Length bytes of body)."""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(65536)
    head, _, body = answer.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def test_slow_sockets_are_closed_and_capped_per_address(start_server: Callable[..., Server]) -> None:
    server = start_server(*LIMITS)
    held: list[socket.socket] = []
    extra: list[socket.socket] = []
    try:
        # a third send nothing, a third trickle a request's header lines, a third a request's body
        for i in range(CAP):
            held.append(_connect(server.port))
            held[-1].sendall(START[i % 3])
        opened = time.monotonic()
        # beyond the cap: answered 503 and closed at once, nothing read
        extra = [_connect(server.port) for _ in range(3 * CAP)]
        for sock in extra:
            sock.settimeout(5)
            answer = sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 503 ") and b"too many open connections" in answer, answer
            assert sock.recv(65536) == b""  # then closed
        assert all(_closed_by_server(s) is None for s in held), "a socket within the cap was dropped at once"
        # another address is served meanwhile
        assert httpx.get(f"{server.url}/healthz", timeout=5).json() == {"status": "ok"}
        # the held sockets are closed by the server once the request timeout has passed (trickling a header
        # line or a few body bytes every 0.3 s does not keep a socket alive)
        still_open = set(range(CAP))
        deadline = opened + REQUEST_TIMEOUT_S + 5
        line = 0
        while still_open and time.monotonic() < deadline:
            time.sleep(0.3)
            line += 1
            for i in sorted(still_open):
                if _closed_by_server(held[i]) is not None:
                    still_open.discard(i)
                elif i % 3:
                    try:
                        held[i].sendall(f"X-Slow-{line}: 1\r\n".encode() if i % 3 == 1 else b"name: ")
                    except (BrokenPipeError, ConnectionResetError):
                        still_open.discard(i)
        waited = time.monotonic() - opened
        assert not still_open, f"{len(still_open)} of {CAP} slow sockets still open after {waited:.1f} s"
        assert waited >= REQUEST_TIMEOUT_S - 0.5, f"closed after {waited:.1f} s, before the request timeout"
        # their slots are free again: the slow peer is served now
        sock = _connect(server.port)
        extra.append(sock)
        assert _request(sock).startswith(b"HTTP/1.1 200 ")
    finally:
        for sock in held + extra:
            sock.close()


def test_an_idle_kept_alive_connection_is_closed_after_the_idle_timeout(
        start_server: Callable[..., Server]) -> None:
    server = start_server(*LIMITS)
    sock = _connect(server.port)
    try:
        assert _request(sock).startswith(b"HTTP/1.1 200 ")
        answered = time.monotonic()
        sock.settimeout(IDLE_TIMEOUT_S + 5)
        assert sock.recv(65536) == b""  # the server closed it
        waited = time.monotonic() - answered
        assert IDLE_TIMEOUT_S - 0.3 <= waited < IDLE_TIMEOUT_S + 3, waited
    finally:
        sock.close()


def test_connection_limits_are_checked_before_serving(tmp_path: Path) -> None:
    """Out-of-range limits are a one-line error naming the flag, exit code 2, and no work directory made."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for flag, value in (("--request-timeout", "0"), ("--idle-timeout", "inf"), ("--request-timeout", "1e308"),
                        ("--max-client-connections", "0")):
        done = subprocess.run([sys.executable, "-m", "paretotune.cli", "serve", "--port", "0", "--workdir",
                               str(tmp_path / "w"), flag, value], cwd=ROOT, capture_output=True, text=True,
                              env=env, timeout=60)
        assert done.returncode == 2, done.stderr
        assert flag in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert not (tmp_path / "w").exists()
