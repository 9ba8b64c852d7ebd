"""Whether a validated winner's ACF ships with it (:func:`paretotune.pareto.buckets.choose`): only where the ACF
is shown to help on every shape of the bucket, unless its config alone is no validated winner. The verdict tables
come from the real judge (:func:`~paretotune.validate.validation.judge_measured`) on synthetic timings."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from paretotune.pareto.buckets import choose
from paretotune.validate.validation import judge_measured
from paretotune.validate.worker import CONTROL_ID

BUCKETS = {"a": 0, "b": 0}  # two shapes, one bucket


def timings(mean: float, seed: int, n: int = 30) -> list[float]:
    return list(np.random.default_rng(seed).normal(mean, 0.0006, n))


def judged(acf: dict[str, float], twin: dict[str, float]) -> pd.DataFrame:
    """Candidate 7 (an ACF on a new config) at ``acf[shape]`` of the baseline's time, its no-ACF twin -2 at
    ``twin[shape]``."""
    measured = {}
    for n, shape in enumerate(BUCKETS):
        measured[shape] = {"samples": {"baseline": timings(0.30, 10 * n), str(CONTROL_ID): timings(0.30, 10 * n + 1),
                                       "7": timings(0.30 * acf[shape], 10 * n + 2),
                                       "-2": timings(0.30 * twin[shape], 10 * n + 3)}, "errors": {}}
    table, _ = judge_measured(measured, {7: -2}, {-2}, alpha=0.01, min_effect=0.5)
    return table


def choice(table: pd.DataFrame):  # type: ignore[no-untyped-def]
    rechecks = {(7, s): {"run": 9, "passed": 9} for s in BUCKETS}
    [only] = choose(table, BUCKETS, rechecks, lambda c: c["passed"] == c["run"])
    return only


def test_an_acf_that_adds_nothing_is_left_out_when_its_config_alone_wins() -> None:
    table = judged({"a": 0.95, "b": 0.95}, {"a": 0.95, "b": 0.95})
    cand = table[table["candidate_id"] == 7]
    assert cand["significant"].all() and not cand["acf_significant"].any()
    picked = choice(table)
    assert picked.winner == 7 and "not shown to help" in picked.acf_left_out
    assert "no-ACF twin" in picked.acf_left_out and "\n" not in picked.acf_left_out


def test_an_acf_that_helps_on_every_shape_ships() -> None:
    table = judged({"a": 0.93, "b": 0.93}, {"a": 0.95, "b": 0.95})
    assert table.loc[table["candidate_id"] == 7, "acf_significant"].all()
    assert choice(table).acf_left_out == ""


def test_an_acf_that_helps_on_one_shape_only_is_left_out() -> None:
    table = judged({"a": 0.93, "b": 0.95}, {"a": 0.95, "b": 0.95})
    picked = choice(table)
    assert picked.winner == 7 and "on b" in picked.acf_left_out


def test_the_acf_stays_when_the_config_alone_is_no_validated_winner() -> None:
    # the twin is 0.3 % faster than the baseline: not a winner by itself; the candidate, 3 % faster, is one
    table = judged({"a": 0.97, "b": 0.97}, {"a": 0.997, "b": 0.997})
    assert not table.loc[table["candidate_id"] == -2, "significant"].all()
    assert choice(table).acf_left_out == ""


def test_a_table_judged_before_the_acf_verdict_keeps_the_acf() -> None:
    table = judged({"a": 0.95, "b": 0.95}, {"a": 0.95, "b": 0.95}).drop(columns="acf_significant")
    assert choice(table).acf_left_out == ""


def test_a_twin_s_own_row_has_no_acf_verdict() -> None:
    table = judged({"a": 0.95, "b": 0.95}, {"a": 0.95, "b": 0.95})
    twin_row = table[table["candidate_id"] == -2].iloc[0]
    assert twin_row["role"] == "twin" and (twin_row["acf_significant"] is None
                                           or (isinstance(twin_row["acf_significant"], float)
                                               and math.isnan(twin_row["acf_significant"])))
