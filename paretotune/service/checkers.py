"""Checker processes for submissions: parsing and checking a campaign never runs in the server's process.

A hostile body (billion laughs, deep nesting, a kernel import that spins) costs one checker process at most
``check_timeout_s``; then the checker is killed and replaced, and the submission refused. The event loop
only awaits a future, so ``/healthz`` and the other endpoints answer meanwhile. Each checker is owned by one
long-lived thread (PR_SET_PDEATHSIG fires when the thread that started a process ends, and request threads
come and go); submissions wait in a bounded queue, and beyond it are answered 503 at once.
"""
from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from paretotune.service.check_worker import config_to_json
from paretotune.service.config import ServiceConfig

log = logging.getLogger("paretotune.service")
START_TIMEOUT_S = 120.0  # a checker is ready after paretotune's light imports (seconds on a loaded machine)


class Busy(Exception):
    """Every checker is busy and the queue is full: answer 503, the client retries."""


class _Job:
    def __init__(self, body: bytes, content_type: str) -> None:
        self.line = json.dumps({"body": base64.b64encode(body).decode(), "content_type": content_type}) + "\n"
        self.future: Future[dict[str, Any]] = Future()


class CheckerPool:
    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._lock = threading.Lock()
        self._pending = 0
        self._threads: list[threading.Thread] = []
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        self._stopping = threading.Event()

    def start(self) -> None:
        with self._lock:
            if self._threads:
                return
            for i in range(self.config.check_workers):
                thread = threading.Thread(target=self._serve, args=(i,), name=f"paretotune-checker-{i}", daemon=True)
                thread.start()
                self._threads.append(thread)

    async def check(self, body: bytes, content_type: str) -> dict[str, Any]:
        """The checker's answer for one submission; raises :class:`Busy` when the queue is full."""
        self.start()
        with self._lock:
            if self._stopping.is_set() or self._pending >= self.config.check_workers + self.config.max_pending_checks:
                raise Busy
            self._pending += 1
        job = _Job(body, content_type)
        self._jobs.put(job)
        try:
            return await asyncio.wrap_future(job.future)
        finally:
            with self._lock:
                self._pending -= 1

    def shutdown(self) -> None:
        """Kill every checker; queued submissions are answered 503. A later :meth:`check` starts new ones
        (an app served again after its lifespan ended, as test clients do)."""
        with self._lock:
            self._stopping.set()
            threads, self._threads = self._threads, []
        for _ in threads:
            self._jobs.put(None)
        for proc in list(self._procs.values()):
            _kill(proc)
        for thread in threads:
            thread.join(timeout=5)
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None and not job.future.done():
                job.future.set_exception(Busy())
        self._procs.clear()
        self._stopping.clear()

    # -- one checker's thread -----------------------------------------------------------------------------------
    def _serve(self, slot: int) -> None:
        proc: subprocess.Popen[bytes] | None = None
        while True:
            job = self._jobs.get()
            if job is None or self._stopping.is_set():
                if job is not None and not job.future.done():
                    job.future.set_exception(Busy())
                break
            if not job.future.set_running_or_notify_cancel():
                continue
            try:
                if proc is None or proc.poll() is not None:
                    proc = self._spawn(slot)
                reply = self._ask(proc, job.line)
            except _Timeout:
                _kill(proc)
                proc = None
                reply = {"ok": False, "field": None, "error": f"checking the campaign took longer than "
                         f"{self.config.check_timeout_s:g} s (this server's limit); refused"}
            except (OSError, _Broken) as exc:
                if proc is not None:
                    _kill(proc)
                proc = None
                if self._stopping.is_set():
                    job.future.set_exception(Busy())
                    continue
                reply = {"internal": f"checker process failed: {exc}"}
            job.future.set_result(reply)
        if proc is not None:
            _kill(proc)

    def _spawn(self, slot: int) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])  # the same paretotune, installed or not
        env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
        proc = subprocess.Popen([sys.executable, "-m", "paretotune.service.check_worker", str(os.getpid())],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        self._procs[slot] = proc
        assert proc.stdin is not None
        proc.stdin.write((config_to_json(self.config) + "\n").encode())
        proc.stdin.flush()
        if _read_line(proc, START_TIMEOUT_S, self._stopping) != b"ready":
            raise _Broken("checker did not start")
        return proc

    def _ask(self, proc: subprocess.Popen[bytes], line: str) -> dict[str, Any]:
        assert proc.stdin is not None
        proc.stdin.write(line.encode())
        proc.stdin.flush()
        raw = _read_line(proc, self.config.check_timeout_s, self._stopping)
        try:
            reply = json.loads(raw)
        except ValueError:
            raise _Broken("unreadable answer") from None
        if "internal" in reply:
            log.error("checking a submission failed: %s", reply.get("traceback") or reply["internal"])
        return dict(reply)


class _Timeout(Exception):
    pass


class _Broken(Exception):
    pass


def _read_line(proc: subprocess.Popen[bytes], timeout_s: float, stopping: threading.Event) -> bytes:
    """One line from the checker's stdout within ``timeout_s`` (waking every 0.2 s to notice a shutdown)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    data = bytearray()
    deadline = time.monotonic() + timeout_s
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Timeout
        if stopping.is_set():
            raise _Broken("server stopping")
        ready, _, _ = select.select([fd], [], [], min(left, 0.2))
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                raise _Broken(f"checker exited ({proc.poll()})")
            data.extend(chunk)
    return bytes(data).strip()


def _kill(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
