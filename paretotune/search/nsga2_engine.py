"""pymoo's NSGA-II over kernel-config and finite-ACF-list spaces, driven by ask/tell.

Encoding: a knob whose values are all numbers is an ``Integer`` index into its values sorted ascending, so
crossover and mutation move between neighbouring values (num_warps 4 -> 8, not 4 -> 32); any other knob, and
the finite ACF list, is a ``Choice`` (categorical: no order between two ACFs). pymoo's mixed-variable
sampling and mating handle the mix; selection is NSGA-II's binary tournament on rank and crowding, and
survival is NSGA-II's rank-and-crowding.

A failed candidate violates the one inequality constraint (``G = 1``; ok candidates ``G = 0``) and gets a
large finite penalty as objectives, so constrained domination ranks every success above every failure while
the failures still take their place in the population bookkeeping. A generated ACF space cannot be encoded
(ACFs come out of CompileIQ's native sampler): use the compileiq or random engine for it.
"""
from __future__ import annotations

import pickle
from numbers import Real
from typing import Any

from paretotune.errors import UserError
from paretotune.search.base import EngineOptions, Proposal
from paretotune.search.catalog import EngineInfo, register
from paretotune.search.compileiq_engine import ACF_KNOB
from paretotune.search.space import SearchSpace
from paretotune.store.atomic import atomic_write

PENALTY = 1e30  # objective value given to a failed candidate (finite: crowding distance needs finite F)


def _is_number(v: Any) -> bool:
    return isinstance(v, Real) and not isinstance(v, bool)


class NSGA2Engine:
    def __init__(self, space: SearchSpace, *, num_objectives: int, pool_size: int, seed: int) -> None:
        from pymoo.algorithms.moo.nsga2 import NSGA2, binary_tournament
        from pymoo.core.mixed import MixedVariableDuplicateElimination, MixedVariableMating, MixedVariableSampling
        from pymoo.core.problem import Problem
        from pymoo.core.termination import NoTermination
        from pymoo.core.variable import Choice, Integer
        from pymoo.operators.selection.tournament import TournamentSelection

        if space.acf == "generated":
            raise UserError("search.engine: nsga2 searches kernel configs and finite ACF lists (acf.files/acf.pack); "
                            "for generated ACFs (acf.search_space) use compileiq or random")
        self.space, self.num_objectives = space, num_objectives
        self._decoders: dict[str, list[Any]] = {}  # variable -> values by index
        variables: dict[str, Any] = {}
        for name, values in space.free.items():
            if all(_is_number(v) for v in values):
                ordered = sorted(values)
                variables[name] = Integer(bounds=(0, len(ordered) - 1))
                self._decoders[name] = ordered
            else:
                variables[name] = Choice(options=list(range(len(values))))
                self._decoders[name] = list(values)
        if space.acf == "finite" and len(space.acf_options) > 1:
            variables[ACF_KNOB] = Choice(options=list(range(len(space.acf_options))))
        if not variables:
            raise UserError("search: nothing to search (every knob has one value and there is no ACF list)")
        self._problem = Problem(vars=variables, n_obj=num_objectives, n_ieq_constr=1)
        dedupe = MixedVariableDuplicateElimination()
        self._algorithm = NSGA2(
            pop_size=pool_size,
            sampling=MixedVariableSampling(),
            mating=MixedVariableMating(selection=TournamentSelection(func_comp=binary_tournament),
                                       eliminate_duplicates=dedupe),
            eliminate_duplicates=dedupe,
            seed=seed,
        )
        self._algorithm.setup(self._problem, termination=NoTermination())
        self._pending: Any = None  # the population handed out by the last ask
        self._ids: list[str] = []
        self._count = 0

    def _decode(self, x: dict[str, Any]) -> tuple[dict[str, Any], bytes | None]:
        chosen = {k: self._decoders[k][int(x[k])] for k in self._decoders}
        acf = self.space.acf_options[int(x[ACF_KNOB])].data if ACF_KNOB in x else None
        return self.space.config(chosen), acf

    def ask(self) -> list[Proposal]:
        pop = self._algorithm.ask()
        if pop is None or len(pop) == 0:  # mating found no new point: the algorithm is done
            return []
        self._pending = pop
        self._ids = [f"n{self._count + i}" for i in range(len(pop))]
        self._count += len(pop)
        out = []
        for engine_id, x in zip(self._ids, pop.get("X"), strict=True):
            config, acf = self._decode(x)
            out.append(Proposal(engine_id=engine_id, config=config, acf=acf))
        return out

    def tell(self, scores: dict[str, tuple[float, ...] | None]) -> None:
        """Score the whole pending population; a proposal without a score (cut by the budget) counts as failed."""
        import numpy as np  # here, not at the top: importing the module (its catalog entry) stays cheap
        from pymoo.core.evaluator import Evaluator
        from pymoo.problems.static import StaticProblem

        if self._pending is None:
            return
        n = len(self._ids)
        F = np.full((n, self.num_objectives), PENALTY)
        G = np.ones((n, 1))
        for i, engine_id in enumerate(self._ids):
            score = scores.get(engine_id)
            if score is not None:
                F[i] = score
                G[i] = 0.0
        Evaluator().eval(StaticProblem(self._problem, F=F, G=G), self._pending)
        self._algorithm.tell(infills=self._pending)
        self._pending, self._ids = None, []

    def save(self, path: str) -> bool:
        """Pickle the pymoo algorithm (population, random state, generation) between generations."""
        if self._pending is not None:
            return False  # pymoo cannot hold an asked population across a pickle: checkpoint after tell only
        atomic_write(path, pickle.dumps({"algorithm": self._algorithm, "count": self._count}))
        return True

    def restore(self, path: str) -> None:
        """Continue from :meth:`save` (always taken between generations: nothing is pending)."""
        with open(path, "rb") as fh:
            state = pickle.load(fh)
        self._algorithm, self._count = state["algorithm"], int(state["count"])
        self._problem = self._algorithm.problem
        self._pending, self._ids = None, []


def create(space: SearchSpace, options: EngineOptions) -> NSGA2Engine:
    """The engine's entry point (its catalog entry below; :mod:`paretotune.search.registry` calls it)."""
    return NSGA2Engine(space, num_objectives=options.n_objectives, pool_size=options.pool_size, seed=options.seed)


register(EngineInfo("nsga2", create, "pymoo NSGA-II, mixed integer/categorical encoding",
                    acf_sources=("finite", "none")))
