"""Start, watch and stop campaign processes; one GPU campaign per GPU, static ones up to a set concurrency.

Each campaign runs as ``paretotune run campaign.yaml --out run --resume --quiet`` (through ``child.py``) in a new
session, so its process group holds it and its evaluation workers: cancelling kills the group. The same
command continues a run after a restart (``--resume`` starts it when there is nothing to continue).

A server killed with SIGKILL cannot stop its children, so each child arms PR_SET_PDEATHSIG (Linux; see ``child.py``)
and dies with the server; on start, :meth:`Scheduler.recover` kills whatever is left of a group recorded as running and
queues the campaign again at the front, where ``--resume`` continues it from its stored records.
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from paretotune.processes import kill_group
from paretotune.service.config import ServiceConfig
from paretotune.service.store import CampaignState, CampaignStore

LOG_TAIL = 2000
log = logging.getLogger("paretotune.service")


class Scheduler:
    def __init__(self, store: CampaignStore, config: ServiceConfig) -> None:
        self.store, self.config = store, config
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self.lock = threading.RLock()  # tick (background thread) and request handlers (thread pool) share state
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Recover, then tick every ``poll_s`` in a daemon thread until :meth:`shutdown`."""
        with self.lock:
            self.recover()
        self._thread = threading.Thread(target=self._loop, name="paretotune-scheduler", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.config.poll_s):
            try:
                with self.lock:
                    self.tick()
            except Exception:
                log.exception("scheduler step failed; retrying")

    # -- start-up ---------------------------------------------------------------------------------------------
    def recover(self) -> list[str]:
        """Campaigns a previous server left running: kill leftovers and queue them again (ids returned)."""
        resumed = []
        for state in self.store.all():
            if state.status != "running":
                continue
            if state.pid is not None:
                _kill_group(state.pid)
            state.status, state.pid, state.slot = "queued", None, None
            if state.cancel_requested:
                state.status, state.finished = "cancelled", time.time()
            self.store.save(state)
            resumed.append(state.id)
        return resumed

    # -- one scheduling step ------------------------------------------------------------------------------------
    def tick(self) -> None:
        """Reap finished processes, then start queued campaigns while slots are free (cheap: called often)."""
        for cid, proc in list(self._procs.items()):
            rc = proc.poll()
            if rc is not None:
                del self._procs[cid]
                self._finished(cid, rc)
        busy = {s.slot for s in self.store.all() if s.status == "running"}
        for state in self.store.all():
            if state.status != "queued":
                continue
            slot = self._free_slot(state, busy)
            if slot is None:
                continue
            self._start(state, slot)
            busy.add(slot)

    def _free_slot(self, state: CampaignState, busy: set[str | None]) -> str | None:
        slots = list(self.config.gpus) if state.kind == "gpu" else \
            [f"cpu{i}" for i in range(self.config.static_concurrency)]
        return next((s for s in slots if s not in busy), None)

    def _start(self, state: CampaignState, slot: str) -> None:
        folder = self.store.folder(state.id)
        env = dict(os.environ, **self.config.extra_env)
        root = str(Path(__file__).resolve().parents[2])  # the same paretotune, installed or not
        env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
        if state.kind == "gpu":
            env["CUDA_VISIBLE_DEVICES"] = slot
        if self.config.ray_address is not None:  # the operator's cluster (campaigns may not name one)
            env["RAY_ADDRESS"] = self.config.ray_address
        else:
            env.pop("RAY_ADDRESS", None)
        cmd = [self.config.python or sys.executable, "-m", "paretotune.service.child", str(os.getpid()), "run",
               str(folder / "campaign.yaml"), "--out", str(folder / "run"), "--resume", "--quiet"]
        state.attempts += 1
        try:
            with open(folder / "log.txt", "ab") as out:
                out.write(f"\n--- attempt {state.attempts} at {time.strftime('%Y-%m-%dT%H:%M:%S')}\n".encode())
                out.flush()
                proc = subprocess.Popen(cmd, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:  # cannot start at all: the campaign fails, the queue goes on
            state.status, state.finished, state.error = "failed", time.time(), f"cannot start: {exc}"
            self.store.save(state)
            return
        self._procs[state.id] = proc
        state.status, state.pid, state.slot = "running", proc.pid, slot
        state.started = state.started or time.time()
        self.store.save(state)

    def _finished(self, cid: str, rc: int) -> None:
        state = self.store.get(cid)
        if state is None:
            return
        _kill_group(state.pid)  # workers that outlived their campaign process
        state.returncode, state.finished, state.pid = rc, time.time(), None
        if state.cancel_requested:
            state.status = "cancelled"
        elif rc == 0:
            state.status = "done"
        else:
            state.status = "failed"
            state.error = _tail(self.store.folder(cid) / "log.txt")
        self.store.save(state)

    # -- requests ------------------------------------------------------------------------------------------------
    def cancel(self, state: CampaignState) -> CampaignState:
        if state.status == "queued":
            state.status, state.finished, state.cancel_requested = "cancelled", time.time(), True
            self.store.save(state)
        elif state.status == "running":
            state.cancel_requested = True
            self.store.save(state)
            proc = self._procs.get(state.id)
            if state.pid is not None:
                _kill_group(state.pid, signal.SIGTERM)
            if proc is not None:
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    _kill_group(state.pid)
                    proc.wait(timeout=5)
                del self._procs[state.id]
                self._finished(state.id, proc.returncode)
            # the next queued campaign is started by the scheduler thread, never here: a campaign process
            # dies with the thread that started it (PR_SET_PDEATHSIG), and request threads come and go
        return state

    def shutdown(self) -> None:
        """Stop every campaign process but leave them 'running' on disk: the next server resumes them."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for proc in self._procs.values():
            _kill_group(proc.pid)
        for proc in self._procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self._procs.clear()


def _kill_group(pgid: int | None, sig: int = signal.SIGKILL) -> None:
    """Signal a campaign's process group if any of it is left; after SIGKILL, wait up to 5 s for it to go."""
    kill_group(pgid, sig, wait_s=5.0 if sig == signal.SIGKILL else 0.0)


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()[-LOG_TAIL:]
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace").strip()
