"""One round of a Helion search: Helion's search algorithm in its own thread, stepped in strict alternation with
the engine.

Each round of a Helion search runs in its own thread, in strict alternation with the caller (a coroutine):
``ask`` lets it run until it calls ``benchmark`` (a batch: the proposals ``ask`` returns) or ends; ``tell``
records scores; once a batch is told in full, the next ``ask`` lets the search go on. Nothing runs concurrently
with paretotune's code, so Helion's global ``random`` state (seeded from the round's seed), the target's device
features and the process environment are swapped in and out at each hand-over, and nothing else disturbs them.
(Helion's ``autotune`` patches ``os.environ`` for its whole run, ``TRITON_STORE_BINARY_ONLY=1`` among it: left
in place while a round waits for scores, every Triton compile of the process, and every worker it starts, would
cache kernels without their PTX, and the patch's exit would restore an environment older than the caller's.) A
point measured before (the baseline, an earlier round's result) is answered inside the thread, never built
again. A round restored from a checkpoint first answers its logged calls from the log, checked call by call.
"""
from __future__ import annotations

import contextlib
import os
import random
import threading
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from paretotune.search.acf_list import label
from paretotune.search.space import NativeSpace

Score = tuple[float, ...] | None
PENDING: Any = type("Pending", (), {"__repr__": lambda self: "PENDING"})()  # an item's score before it is told


class Stop(BaseException):
    """Unwinds a search thread the engine no longer needs (not an ``Exception``: Helion must not catch it)."""


@dataclass
class Item:
    """One config of a ``benchmark`` call: a point to evaluate, or one answered inside the thread."""

    key: str
    config: dict[str, Any]
    acf: bytes | None
    engine_id: str | None = None  # None: known before (never handed out)
    score: Any = PENDING  # Score once told
    issued: bool = False


@dataclass
class Plan:
    """What a round starts from; with its calls' scores this determines everything the round does."""

    island: int
    index: int
    seed: int
    acfs: list[bytes | None]
    seeds: list[tuple[dict[str, Any], bytes | None]]
    train_upto: int  # results (in tell order) it is trained on before it starts


class RoundOwner(Protocol):
    """What a round needs of its engine."""

    native: NativeSpace
    reference: list[float] | None  # the scalarisation's reference

    def item(self, config: Any, round_: Round) -> Item:
        """The item for one config Helion proposed in ``round_``."""

    def known(self, key: str) -> Any:
        """The score of a point measured before, else :data:`PENDING`."""

    def run_search(self, round_: Round) -> None:
        """Build the round's Helion search and run it (in the round's thread, holding the turn)."""


@dataclass(eq=False)
class Round:
    """One run of a Helion search algorithm in a thread, stepped in strict alternation with the engine."""

    engine: RoundOwner
    plan: Plan
    replay: list[list[dict[str, Any]]] = field(default_factory=list)  # logged calls still to answer (scores decoded)
    calls: list[list[Item]] = field(default_factory=list)
    current: list[Item] | None = None  # the call waiting for scores
    done: bool = False
    error: str | None = None
    posted: int = 0  # items handed out for evaluation

    def __post_init__(self) -> None:
        self.labels = [label(a) for a in self.plan.acfs]
        self.by_label = dict(zip(self.labels, self.plan.acfs, strict=True))
        self._cv = threading.Condition()
        self._turn = "main"
        self._stop = False
        self._thread: threading.Thread | None = None
        self._rng: Any = None
        self._outer_rng: Any = None
        self._env: dict[str, str] = {}
        self._outer_env: dict[str, str] = {}
        self._ctx: contextlib.ExitStack | None = None

    # -- the caller's side --
    def step(self) -> None:
        """Let the search run until its next batch waits for scores (``current``) or it ends (``done``)."""
        if self.done:
            return
        if self._thread is None:
            p = self.plan
            self._thread = threading.Thread(target=self._run, name=f"paretotune-helion-{p.island}.{p.index}",
                                            daemon=True)
            self._thread.start()
        with self._cv:
            self._turn = "helion"
            self._cv.notify_all()
            self._cv.wait_for(lambda: self._turn == "main")

    def stop(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            return
        with self._cv:
            self._stop, self._turn = True, "helion"
            self._cv.notify_all()
        self._thread.join(timeout=30)

    # -- the search thread's side --
    def _run(self) -> None:
        with self._cv:
            self._cv.wait_for(lambda: self._turn == "helion")
        try:
            if not self._stop:
                self._enter(first=True)
                self.engine.run_search(self)
        except Stop:
            pass
        except Exception as exc:  # noqa: BLE001 - Helion's own errors end the round; the engine decides
            if type(exc).__name__ != "NoConfigFound":  # every config of a round failed: data, not an error
                self.error = f"{error_head(exc)}\n{traceback.format_exc(limit=8)}"
        finally:
            if self._ctx is not None:
                self._leave()
            with self._cv:
                self.done, self._turn = True, "main"
                self._cv.notify_all()

    def _enter(self, first: bool = False) -> None:
        """The search's side of a hand-over: its random state, environment and the target's device features in
        place."""
        self._outer_rng = random.getstate()
        self._outer_env = dict(os.environ)
        if first:
            random.seed(self.plan.seed)
        else:
            random.setstate(self._rng)
            set_environ(self._env)
        self._ctx = contextlib.ExitStack()
        self._ctx.enter_context(self.engine.native.context())

    def _leave(self) -> None:
        assert self._ctx is not None
        self._ctx.close()
        self._ctx = None
        self._rng = random.getstate()
        random.setstate(self._outer_rng)
        self._env = dict(os.environ)
        set_environ(self._outer_env)

    def call(self, configs: Sequence[Any]) -> list[Score]:
        """A ``benchmark`` call of the search: its scores, from the log, from what is known, or told."""
        items = [self.engine.item(c, self) for c in configs]
        n = len(self.calls)
        self.calls.append(items)
        if self.replay:
            self._answer_from_log(n, items)
        else:
            for j, item in enumerate(items):
                known = self.engine.known(item.key)
                if known is not PENDING:
                    item.score = known
                else:
                    item.engine_id = f"{self.plan.island}.{self.plan.index}.{n}.{j}"
                    self.posted += 1
        if any(i.score is PENDING for i in items):
            self.current = items
            self._leave()
            with self._cv:
                self._turn = "main"
                self._cv.notify_all()
                self._cv.wait_for(lambda: self._turn == "helion")
            self._enter()  # before a stop too: Helion's exits (its environment patch among them) run on its own state
            if self._stop:
                raise Stop
            self.current = None
        return [i.score for i in items]  # type: ignore[misc]

    def _answer_from_log(self, n: int, items: list[Item]) -> None:
        logged = self.replay.pop(0)
        if [e["k"] for e in logged] != [i.key for i in items]:
            raise RuntimeError(f"Helion's search did not replay: call {n} of island {self.plan.island} round "
                               f"{self.plan.index} proposed other configs than the checkpoint holds")
        for item, entry in zip(items, logged, strict=True):
            item.engine_id, item.issued = entry["id"], bool(entry.get("issued", True))
            item.score = entry["s"]


def error_head(exc: BaseException) -> str:
    """The first line of a round's error: the exception and its message, or, where it has none (Helion's bare
    ``assert``), where it was raised, so the line names the fault on its own (run.json ``search_errors``)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if str(exc) or not frames:
        return f"{type(exc).__name__}: {exc}"
    last = frames[-1]
    return f"{type(exc).__name__} at {'/'.join(Path(last.filename).parts[-3:])}:{last.lineno} ({last.name})"


def set_environ(values: Mapping[str, str]) -> None:
    """Make ``os.environ`` equal ``values``, touching only what differs."""
    for name in [n for n in os.environ if n not in values]:
        del os.environ[name]
    for name, value in values.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def round_seed(seed: int, island: int, index: int) -> int:
    """A distinct, reproducible seed per (campaign seed, island, round)."""
    return (seed * 1_000_003 + island * 10_007 + index) % 2**32
