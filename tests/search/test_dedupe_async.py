"""De-duplication with overlapping batches (the steady schedule): a point in flight is never handed out again,
its repeats are told with its score when it comes, and every proposal the inner engine made is told once."""
from __future__ import annotations

from typing import Any

from paretotune.search.base import Proposal, is_asynchronous
from paretotune.search.dedupe import Deduplicated, proposal_key
from paretotune.search.random_engine import RandomEngine
from paretotune.search.space import SearchSpace

SPACE = SearchSpace(knobs={"num_warps": [4, 8], "num_stages": [1, 2]})  # 4 points: random batches repeat


class Recording(RandomEngine):
    """Random search that remembers what it proposed and what it was told."""

    def __init__(self) -> None:
        super().__init__(SPACE, pool_size=6, seed=3)
        self.proposed: set[str] = set()
        self.told: dict[str, Any] = {}

    def ask(self) -> list[Proposal]:
        out = super().ask()
        self.proposed |= {p.engine_id for p in out}
        return out

    def tell(self, scores: dict[str, Any]) -> None:
        assert not set(scores) & set(self.told), "told twice"
        self.told.update(scores)


def test_overlapping_asks_hand_out_each_point_once() -> None:
    inner = Recording()
    engine = Deduplicated(inner)
    assert is_asynchronous(engine)
    first = engine.ask()
    second = engine.ask()  # while the first batch is all in flight
    keys = [proposal_key(p) for p in first + second]
    assert len(keys) == len(set(keys)) <= 4
    scores = {p.engine_id: (float(i),) for i, p in enumerate(first + second)}
    for p in first + second:  # told one at a time, as records arrive
        engine.tell({p.engine_id: scores[p.engine_id]})
    assert set(inner.told) == inner.proposed  # repeats (in flight or within a batch) told with their original
    by_key = {proposal_key(p): scores[p.engine_id] for p in first + second}
    assert len(set(by_key.values())) == len(by_key)
    third = engine.ask()  # every point is known now: repeats are answered from the cache, nothing is new
    assert third == [] and set(inner.told) == inner.proposed
