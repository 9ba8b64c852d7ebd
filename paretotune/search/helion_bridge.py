"""The seam between Helion's search algorithms and paretotune's ask/tell: a benchmark provider that hands each
batch to the round, and the search built on the ConfigSpec paretotune derives.

A Helion search (``helion.autotuner.search_algorithms``: ``LFBOTreeSearch``, Helion's default, and the others)
measures only through ``self.benchmark_provider.benchmark(configs) -> list[BenchmarkResult]``; its ``_prepare``
builds that provider from the class it was given (Helion's documented way to swap benchmarking strategies:
``BenchmarkProvider``), and the kernel it tunes is any object with a ``config_spec``, ``settings`` and ``env``:
Helion's adapter for foreign kernels takes any ConfigSpec (:func:`paretotune.compat.helion.external_kernel`). So
the search runs unchanged on the ConfigSpec paretotune derives (the kernel bound to meta tensors for the
campaign's target: no GPU here), and its provider hands each batch to paretotune's ask/tell. Two methods of the
search are replaced (:func:`paretotune.compat.helion.without_gpu_retiming`): ``rebenchmark`` and
``final_rebenchmark_best`` time compiled functions on this process's GPU. paretotune times every candidate in its
GPU worker against the baseline on shared buffers and validates winners in a fresh process, so here they are
no-ops: the search ranks by paretotune's measurement.
"""
from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from paretotune.compat import helion as compat_helion
from paretotune.search.acf_list import label
from paretotune.search.helion_round import Round, Score
from paretotune.search.scalarize import scalarize


@dataclass(frozen=True)
class Known:
    """One result a round's surrogate is trained on before it starts."""

    config: dict[str, Any]
    acf: bytes | None
    score: Score


@cache
def provider_class() -> type:
    """The provider (Helion is imported only when a search runs)."""
    compat_helion.import_helion()
    from helion.autotuner.benchmark_provider import BenchmarkProvider, BenchmarkResult

    def unset(*_args: object, **_kw: object) -> None:
        raise RuntimeError("paretotune measures candidates itself: there is no function to call here")

    class BridgeProvider(BenchmarkProvider):
        """Hands a search's batch to the round (and so to paretotune's ask/tell)."""

        mutated_arg_indices: Sequence[int] = ()

        def __init__(self, round_: Round, **_context: object) -> None:
            self._round = round_

        def setup(self) -> None:
            """Nothing to set up: paretotune's evaluator owns the processes and the GPU."""

        def cleanup(self) -> None:
            """Nothing to release."""

        def benchmark(self, configs: list[Any], *, desc: str = "", raise_if_no_viable_config: bool = True
                      ) -> list[Any]:
            scores = self._round.call(configs)
            now, reference = time.perf_counter(), self._round.engine.reference
            return [BenchmarkResult(config=c, fn=unset, perf=scalarize(s, reference),
                                    status="ok" if s is not None else "error", compile_time=None, completed_at=now)
                    for c, s in zip(configs, scores, strict=True)]

    return BridgeProvider


def run_round(round_: Round, spec: Any, *, algorithm: str, effort: str, searched: bool, known: list[Known],
              reference: list[float] | None) -> None:
    """Build the round's Helion search (``algorithm`` at ``effort`` over ConfigSpec ``spec``; ``searched``: the
    ACF is one more dimension) and run it, trained first on ``known`` where the algorithm takes training data."""
    compat_helion.import_helion()
    from helion.autotuner import search_algorithms
    from helion.autotuner.effort_profile import get_effort_profile
    from helion.autotuner.pattern_search import InitialPopulationStrategy
    from helion.runtime.config import Config

    plan = round_.plan

    def config_of(values: Mapping[str, Any], acf: bytes | None) -> Any:
        return Config(**{**values, "advanced_controls_file": label(acf)} if searched else dict(values))

    seeds = [config_of(c, a if a in plan.acfs else None) for c, a in plan.seeds]
    kernel = compat_helion.external_kernel(
        spec, autotune_random_seed=plan.seed, autotune_search_acf=round_.labels if searched else [],
        autotune_seed_configs=seeds or None, autotune_progress_bar=False, autotune_log_level=logging.WARNING,
        autotune_effort=effort, autotune_config_overrides={}, autotune_max_generations=None,
        autotune_budget_seconds=None)
    cls = compat_helion.without_gpu_retiming(search_algorithms[algorithm])
    params = inspect.signature(cls.__init__).parameters
    kwargs = {k: v for k, v in cls.get_kwargs_from_profile(get_effort_profile(effort), kernel.settings).items()
              if k in params}
    if "initial_population_strategy" in params:  # the seed configs first, then Helion's random draws
        kwargs["initial_population_strategy"] = InitialPopulationStrategy.FROM_BEST_AVAILABLE
    if "best_available_pad_random" in params:
        kwargs["best_available_pad_random"] = True
    search = cls(kernel, (), **kwargs)
    provider_cls = provider_class()
    compat_helion.use_benchmark_provider(search, lambda **context: provider_cls(round_, **context))
    _seed_training(search, known, config_of, reference)
    search.autotune()


def _seed_training(search: Any, known: list[Known], config_of: Callable[[Mapping[str, Any], bytes | None], Any],
                   reference: list[float] | None) -> None:
    """Give the surrogate of an algorithm that has one (LFBO's ``seed_training_data``) every result so far."""
    seed_training = getattr(search, "seed_training_data", None)
    if seed_training is None or not known:
        return
    from helion.autotuner.benchmark_provider import BenchmarkResult

    seed_training([BenchmarkResult(config=config_of(k.config, k.acf), fn=lambda *a: None,
                                   perf=scalarize(k.score, reference),
                                   status="ok" if k.score is not None else "error", compile_time=None)
                   for k in known])
