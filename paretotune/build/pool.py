"""A pool of worker processes that evaluates candidates and survives hangs and crashes.

``concurrent.futures`` does the scheduling; what it lacks is killing a hung task and carrying on after a
worker dies (a segfault breaks the whole pool). We keep at most one task per worker in flight, so each task's
deadline counts from its own start; a task past its deadline, or one that kills its worker (found by running
the tasks that were in flight one at a time), is recorded as failed, the pool is restarted, and the other
in-flight candidates are evaluated again. One bad candidate never stops a campaign.

Each worker leads its own process group, so what runs in it (ptxas, processes a kernel's import started)
goes with it: killing or closing the pool kills the workers' groups. Workers watch their parent: when the
campaign process dies without shutting the pool down (SIGKILL, the OOM killer), each kills its own group at
once instead of living on as orphans that hold memory and CPU (:mod:`paretotune.processes`).

A worker imports the campaign's kernel only once the campaign process has imported it on trial
(:meth:`WorkerPool.kernel_checked`, or the first :meth:`WorkerPool.run`): a kernel file that fails, exits or
prints at import time does so once, in the trial, not once more in every worker.

``concurrent.futures`` spawns workers one per submit, as tasks arrive; :meth:`WorkerPool.start` spawns them all
at once, so their imports and warm-up overlap other work (a GPU campaign's baseline measurement) instead of
delaying the first generation. :func:`in_background` drains :meth:`WorkerPool.run` in a thread, so a consumer
that spends time on each record (the GPU measurement) never leaves CPU workers waiting for new tasks.

Workers are forked from a fork server that has already imported the heavy modules (torch, Triton, Helion
where that is fork-safe: :mod:`.fork_server`): a spawned worker spends seconds importing them, each one again,
and a pool restarted after a ptxas hang would pay that for every worker. Each worker takes the campaign
process's environment as it was when the pool was made (the fork server's is older).
"""
from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from paretotune.build.base import Feed, cut_by_wall_clock, failed_record
from paretotune.build.fork_server import worker_context
from paretotune.processes import kill_group, kill_own_group_when_closed, lead_own_group
from paretotune.records import Candidate, TrialRecord
from paretotune.toolchain.ptxas import clean_stale_temp_folders

STARTUP_GRACE_S = 90.0  # a fresh worker imports torch and Triton before its first task
CLOSE_POLL_S = 1.0
FEED_POLL_S = 0.05  # how soon a free worker takes a candidate put into the feed while others compile
CUT_AT_WALL_CLOCK = cut_by_wall_clock("build finished")


class WorkerPool:
    """Evaluate candidates with ``job(candidate) -> TrialRecord`` in ``workers`` worker processes."""

    accepts_feed = True  # run() takes a Feed: candidates put while it runs are taken as workers free up

    def __init__(self, job: Callable[[Candidate], TrialRecord], initializer: Callable[..., None],
                 initargs: tuple[Any, ...], workers: int, timeout_s: float, nice: int = 0,
                 kernel_vetted: Any = None) -> None:
        """``nice``: added to the workers' niceness, so that latency-critical processes (the GPU worker timing a
        candidate, a spare starting after a fault) get a busy host's CPUs before throughput work does.
        ``kernel_vetted``: the event (of :func:`worker_context`) the initializer waits on before it imports
        user code; set by :meth:`kernel_checked` or the first :meth:`run`."""
        self.job, self.initializer, self.initargs = job, initializer, initargs
        self.kernel_vetted = kernel_vetted
        self.workers, self.timeout_s, self.nice = workers, timeout_s, nice
        self._executor: ProcessPoolExecutor | None = None
        self._fresh = True
        self._closed = False
        self._started: ProcessPoolExecutor | None = None
        self._starting: threading.Thread | None = None  # spawning the workers of start(); joined before use
        self._lock = threading.Lock()
        # time.monotonic() after which no build runs on (the campaign's wall clock; None: only timeout_s)
        self.cut_at: float | None = None

    def start(self) -> None:
        """Spawn every worker now (each runs its initializer in the background) instead of one per submit, in a
        thread: the first spawn waits for the fork server to import its preloads (torch, Triton: seconds), which
        the caller spends importing and checking the kernel instead. Idempotent; a pool restarted after a fault
        spawns lazily again until the next call."""
        pool = self._pool()
        if self._started is pool:
            return
        self._started = pool
        import_spawn_modules()
        self._starting = threading.Thread(target=self._spawn_all, args=(pool,), name="pool-start", daemon=True)
        self._starting.start()

    def _spawn_all(self, pool: ProcessPoolExecutor) -> None:
        for _ in range(self.workers):  # an idle worker takes one of these; every other submit spawns a worker
            try:
                pool.submit(os.getpid)
            except (RuntimeError, BrokenProcessPool, OSError):  # shut down or broken meanwhile: run() will see
                return

    def _started_fully(self) -> None:
        """Wait for :meth:`start`'s spawning: a kill or shutdown must see every worker it started."""
        starting = self._starting
        if starting is not None and starting is not threading.current_thread():
            starting.join()

    def kernel_checked(self) -> None:
        """The campaign process imported the kernel on trial: workers may import it now."""
        if self.kernel_vetted is not None:
            self.kernel_vetted.set()

    def _pool(self) -> ProcessPoolExecutor:
        with self._lock:  # run() may be drained in one thread while start() is called from another
            if self._closed:
                raise RuntimeError("the worker pool is closed")
            if self._executor is None:
                self._executor = ProcessPoolExecutor(self.workers, mp_context=worker_context(),
                                                     initializer=_start_worker,
                                                     initargs=(dict(os.environ), self.nice, self.initializer,
                                                               *self.initargs))
                self._fresh = True
            return self._executor

    def kill(self) -> None:
        """Kill the workers now, mid-import or mid-task; the pool starts fresh ones if used again."""
        self._kill()

    def _kill(self) -> None:
        """Tear the pool down hard (a hung task cannot be cancelled any other way)."""
        self._started_fully()
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is None:
            return
        for proc in _workers(executor):
            proc.kill()
            kill_group(proc.pid)  # what runs in it (ptxas, a kernel's processes); the worker is not reaped yet
        try:
            executor.shutdown(wait=True, cancel_futures=True)
        except OSError:  # its manager thread closed the wakeup pipe first (see _submit): the executor is gone
            pass
        clean_stale_temp_folders()  # the killed workers' ptxas folders

    def close(self) -> None:
        """Shut the workers down, then kill what they left running; a :meth:`run` still going in another
        thread ends without submitting more."""
        self._started_fully()
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            pids = [proc.pid for proc in _workers(executor)]
            executor.shutdown(wait=True, cancel_futures=True)
            for pid in pids:  # a group outlives its leader while it has members: its id is not reused then
                kill_group(pid)
        clean_stale_temp_folders()  # this run's and those of runs killed before

    def run(self, candidates: Sequence[Candidate] | Feed) -> Iterator[TrialRecord]:
        """Yield one record per candidate as each finishes (order not kept). With a :class:`Feed`, candidates
        put while this runs are taken as workers free up, until the feed is closed and all are done.

        A dead worker breaks every task in flight, so a crash cannot be pinned on one of them: all of them are
        run again one at a time, and a crash while a candidate runs alone is that candidate's.
        """
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        self.kernel_checked()  # the caller evaluates: it has checked the kernel
        self._started_fully()
        feed = candidates if isinstance(candidates, Feed) else Feed(candidates)
        if not isinstance(candidates, Feed):
            feed.close()
        queue: list[Candidate] = []
        more = True  # the feed may still bring candidates
        alone: list[Candidate] = []  # in flight when the pool broke: each is retried with nothing beside it
        inflight: dict[Future[TrialRecord], tuple[Candidate, float, str]] = {}  # (candidate, deadline, why)
        while (queue or alone or inflight or more) and not self._closed:
            if more and len(queue) < self.workers:  # wait for the feed only when nothing else is going on
                idle = not (queue or alone or inflight)
                got, more = feed.take(self.workers - len(queue), CLOSE_POLL_S if idle else 0.0)
                queue += got
            if self.cut_at is not None and time.monotonic() >= self.cut_at:  # past the wall clock: none starts
                for cand in alone + queue:
                    yield failed_record(cand, CUT_AT_WALL_CLOCK)
                alone, queue = [], []
            if alone:
                if not inflight:
                    self._submit(alone.pop(0), inflight)
            else:
                while queue and len(inflight) < self.workers:
                    self._submit(queue.pop(0), inflight)
            if not inflight:
                continue
            solo = len(inflight) == 1
            next_deadline = min(d for _, d, _ in inflight.values())
            # at most CLOSE_POLL_S at a time: a pool closed from another thread cancels its queued futures
            # without waking this wait, so the loop looks at ``_closed`` again this often
            poll = FEED_POLL_S if more and len(inflight) < self.workers else CLOSE_POLL_S  # a worker is free
            done, _ = wait(list(inflight), timeout=min(poll, max(0.0, next_deadline - time.monotonic())),
                           return_when=FIRST_COMPLETED)
            broken: list[Candidate] = []
            for fut in done:
                cand, _, _ = inflight.pop(fut)
                try:
                    yield fut.result()
                    self._fresh = False
                except BrokenProcessPool:
                    broken.append(cand)
                except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable result
                    yield failed_record(cand, f"worker error: {type(exc).__name__}: {exc}")
            now = time.monotonic()
            late = [f for f, (_, d, _) in inflight.items() if d <= now]
            if late or broken:
                for fut in late:
                    cand, _, why = inflight.pop(fut)
                    yield failed_record(cand, why)
                if broken:
                    if solo:
                        yield failed_record(broken[0], "worker process crashed (killed by a signal or out of memory)")
                    else:
                        alone += broken + [c for c, _, _ in inflight.values()]
                else:
                    queue[:0] = [c for c, _, _ in inflight.values()]  # innocent bystanders of a timeout run again
                inflight.clear()
                self._kill()

    def _submit(self, cand: Candidate, inflight: dict[Future[TrialRecord], tuple[Candidate, float, str]]) -> None:
        grace = STARTUP_GRACE_S if self._fresh else 0.0
        own = time.monotonic() + self.timeout_s + grace
        cut = self.cut_at is not None and self.cut_at < own
        inflight[self._submitted(cand)] = (
            cand, self.cut_at if cut else own, CUT_AT_WALL_CLOCK if cut else f"timed out after {self.timeout_s:.0f} s")

    def _submitted(self, cand: Candidate) -> Future[TrialRecord]:
        """The candidate's future; one already failed with BrokenProcessPool where a worker died since the last
        look (the executor refuses work then). The run loop treats it as any task the crash broke. On CPython
        3.11 a submit racing the executor's manager thread, which closes its wakeup pipe on a dead worker
        without a lock, raises ``OSError: handle is closed`` instead (seen once in a fault-injection test):
        the same case."""
        try:
            return self._pool().submit(self.job, cand)
        except (BrokenProcessPool, OSError) as exc:
            if isinstance(exc, OSError) and "handle is closed" not in str(exc):
                raise
            broken: Future[TrialRecord] = Future()
            broken.set_exception(BrokenProcessPool(f"the pool broke before the candidate started ({exc})"))
            return broken


T = TypeVar("T")
_END = object()


def in_background(items: Iterator[T], join_s: float = 5.0) -> Iterator[T]:
    """Yield what ``items`` yields, consuming it in a thread so it never waits for the consumer.

    The consumer gets the producer's exception, if any, where the items stop. A consumer that stops early
    waits up to ``join_s`` for the producer to notice; close the pool to end a producer stuck in a long task.
    """
    out: queue.Queue[tuple[bool, Any]] = queue.Queue()
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                out.put((True, item))
                if stop.is_set():
                    break
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            out.put((False, exc))
            return
        finally:
            close = getattr(items, "close", None)
            if close is not None and stop.is_set():
                close()
        out.put((True, _END))

    thread = threading.Thread(target=produce, name="pool-feed", daemon=True)
    thread.start()
    try:
        while True:
            ok, item = out.get()
            if not ok:
                raise item
            if item is _END:
                return
            yield item
    finally:
        stop.set()
        thread.join(join_s)


def import_spawn_modules() -> None:
    """Import here what a pool's first spawn imports lazily (Python 3.11: the fork server's Popen), before a thread
    spawns: a fork while that thread held a module's import lock (the trial import forks meanwhile) would leave
    the child waiting on it for good if it imported the same module."""
    for name in ("multiprocessing.popen_forkserver", "multiprocessing.popen_spawn_posix"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def _workers(executor: ProcessPoolExecutor) -> list[Any]:
    return list((getattr(executor, "_processes", None) or {}).values())


def adopt_environment(environ: dict[str, str]) -> None:
    """Replace this process's environment with ``environ``: a child of the fork server starts with the
    server's environment, which is older than the campaign process's."""
    os.environ.clear()
    os.environ.update(environ)


def _start_worker(environ: dict[str, str], nice: int, initializer: Callable[..., None], *initargs: Any) -> None:
    """Worker initializer: its own process group, the campaign process's environment, niceness, the parent
    watch (multiprocessing's parent sentinel, a pipe the campaign process holds open, is readable once it died,
    fork server or not: the worker then kills its group), then the job's initializer."""
    lead_own_group()
    adopt_environment(environ)
    if nice:
        os.nice(nice)
    parent = multiprocessing.parent_process()
    if parent is not None:
        kill_own_group_when_closed(parent.sentinel)
    initializer(*initargs)

