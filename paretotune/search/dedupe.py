"""Never spend budget on a point twice: repeated proposals are answered from a cache of earlier scores.

Evolutionary engines re-propose points that left their population, and on a small finite space (4 configs
x 6 ACFs) most of a random or evolutionary batch is repeats. The wrapper hands the campaign only new points
and tells the inner engine the cached score for the repeats, so the inner engine sees every proposal scored.
A failure is cached too: on a static (deterministic) campaign a failing point fails again.

A ``constraint`` (the kernel's rule for which knob combinations it takes, e.g. Helion's ConfigSpec) is
applied here, once for every engine: a rejected point is never handed out; the inner engine is told it
failed, and the rejection is cached like any other failure (``rejected`` counts them).

When ``max_attempts`` inner batches in a row bring nothing new, the space is taken to be exhausted and
``ask`` returns ``[]``, which ends the campaign early.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from paretotune.search.base import Proposal, SearchEngine, is_asynchronous
from paretotune.search.space import point_key
from paretotune.store.atomic import atomic_write_json

Score = tuple[float, ...] | None


def proposal_key(p: Proposal) -> str:
    return point_key(p.config, None if p.acf is None else hashlib.sha256(p.acf).hexdigest())


class Deduplicated:
    """Wraps an engine; ``cache`` (point key -> score) may be shared between engines of one campaign."""

    def __init__(self, inner: SearchEngine, *, cache: dict[str, Score] | None = None,
                 max_attempts: int = 50, constraint: Callable[[Mapping[str, Any]], bool] | None = None) -> None:
        self.inner = inner
        self.constraint = constraint
        self.rejected = 0  # distinct points the constraint refused
        self._verdicts: dict[str, bool] = {}  # config -> constraint verdict (the same config comes with many ACFs)
        self.cache: dict[str, Score] = {} if cache is None else cache
        self.max_attempts = max_attempts
        self._keys: dict[str, str] = {}  # engine_id handed out -> its point key
        self._known: dict[str, Score] = {}  # engine_id of a repeat -> cached score, told with the batch
        self._twins: dict[str, str] = {}  # engine_id repeated within the batch -> engine_id handed out

    @property
    def asynchronous(self) -> bool:
        """As the inner engine (see :func:`paretotune.search.base.is_asynchronous`)."""
        return is_asynchronous(self.inner)

    def ask(self) -> list[Proposal]:
        for _ in range(self.max_attempts):
            proposals = self.inner.ask()
            if not proposals:
                return []
            fresh: list[Proposal] = []
            keys: dict[str, str] = {}
            first_of = {key: engine_id for engine_id, key in self._keys.items()}  # issued, not told yet
            known: dict[str, Score] = {}
            twins: dict[str, str] = {}
            for p in proposals:
                key = proposal_key(p)
                if key in self.cache:
                    known[p.engine_id] = self.cache[key]
                elif key in first_of:
                    twins[p.engine_id] = first_of[key]
                elif not self._allowed(p.config):
                    self.cache[key] = known[p.engine_id] = None  # the kernel rejects it: a failure, never built
                    self.rejected += 1
                else:
                    first_of[key] = p.engine_id
                    keys[p.engine_id] = key
                    fresh.append(p)
            if fresh:
                if self.asynchronous:  # batches overlap: keep what earlier asks left open; repeats told now
                    self._keys.update(keys)
                    self._twins.update(twins)
                    if known:
                        self.inner.tell(known)
                else:
                    self._keys, self._known, self._twins = keys, known, twins
                return fresh
            if self.asynchronous:
                self._twins.update(twins)
            self.inner.tell(known)
        return []

    def know_baseline(self, config: dict[str, Any], score: tuple[float, ...]) -> None:
        """The baseline's config and score (measured before the search), for an inner engine that takes them
        (Helion's search: its reference and first seed, never proposed again)."""
        inner = getattr(self.inner, "know_baseline", None)
        if inner is not None:
            inner(config, score)

    def _allowed(self, config: Mapping[str, Any]) -> bool:
        if self.constraint is None:
            return True
        key = json.dumps(config, sort_keys=True, default=str)
        if key not in self._verdicts:
            self._verdicts[key] = bool(self.constraint(config))
        return self._verdicts[key]

    def tell(self, scores: dict[str, Score]) -> None:
        """A generational inner engine gets its whole batch at once (the repeats' cached scores added); an
        asynchronous one gets ``scores`` and the repeats of those points as they come."""
        full = {} if self.asynchronous else dict(self._known)
        for engine_id, score in scores.items():
            full[engine_id] = score
            key = self._keys.pop(engine_id, None)
            if key is not None:
                self.cache[key] = score
        for engine_id, twin in list(self._twins.items()):
            if twin in scores:
                full[engine_id] = scores[twin]
                del self._twins[engine_id]
        if not self.asynchronous:
            self._keys, self._known, self._twins = {}, {}, {}
        if full:
            self.inner.tell(full)

    def save(self, path: str) -> bool:
        """The inner engine's checkpoint at ``path`` plus ``<path>.dedupe.json`` (cache and the open batch)."""
        if not self.inner.save(path):
            return False
        state = {"cache": {k: None if v is None else list(v) for k, v in self.cache.items()},
                 "keys": self._keys, "known": {k: None if v is None else list(v) for k, v in self._known.items()},
                 "twins": self._twins}
        atomic_write_json(f"{path}.dedupe.json", state)
        return True

    def restore(self, path: str) -> None:
        """Inverse of :meth:`save`, on a freshly built wrapper (for resume)."""
        restore = getattr(self.inner, "restore", None)
        if restore is None:
            raise NotImplementedError(f"{type(self.inner).__name__} cannot restore a checkpoint")
        restore(path)
        with open(f"{path}.dedupe.json", encoding="utf-8") as fh:
            state = json.load(fh)
        self.cache.update({k: None if v is None else tuple(v) for k, v in state["cache"].items()})
        self._keys = dict(state["keys"])
        self._known = {k: None if v is None else tuple(v) for k, v in state["known"].items()}
        self._twins = dict(state["twins"])
