"""Is a measured speedup real? Welch's t-test, Cohen's d and a bootstrap CI on repeated timings.

GPU timings drift: one baseline can land further apart from itself seconds later than ACF candidates land
from each other (docs/results.md). A candidate is called faster only when all three agree -- the difference is unlikely
under noise (p), large relative to the spread (d), and the speedup's confidence interval clears 1.0 --
and, when a whole front is validated at once, p is Holm-corrected for the number of candidates.

The baseline-vs-baseline control guards the rest (:func:`judge_control`): it is tested two-sided, and a
control that differs in either direction by more than :attr:`Thresholds.max_control_bias` means the arms are
not timed alike, so no verdict of that shape can be trusted. A control that passes, or differs by less (a bias
that long, tight samples resolve at a low p, a fraction of a percent), still
measures how far two identical arms land apart: that noise floor is a threshold too
(:attr:`Thresholds.noise_floor`). :func:`attribute` splits a speedup into the config's share
and the ACF's share.

Every function takes two samples of one objective (repeated timings of the baseline and of a candidate).
``direction`` says which way is better; speedup and d are oriented so that > 1 and > 0 mean "better":
speedup is ``mean(baseline) / mean(candidate)`` for "min" (runtime) and the inverse for "max".
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

from paretotune.records import Direction


MAX_CONTROL_BIAS = 0.005  # a control off by at most this (its CI's far end) sets the floor; beyond it, no verdict


@dataclass(frozen=True)
class Thresholds:
    """What "significant" means; the defaults are the issue's: p < 0.01, d > 0.5, CI low > 1 + noise floor.

    ``noise_floor`` is the run's measured control deviation (:attr:`ControlCheck.floor`): a winner's CI low
    must clear ``min_speedup_low + noise_floor``. ``max_control_bias``: the largest floor a control that differs
    significantly from the baseline may set instead of voiding its shape (0: any difference voids it).
    """

    alpha: float = 0.01
    min_effect: float = 0.5
    min_speedup_low: float = 1.0
    noise_floor: float = 0.0
    max_control_bias: float = MAX_CONTROL_BIAS
    confidence: float = 0.95
    n_resamples: int = 2000
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha: must be in (0, 1), got {self.alpha}")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence: must be in (0, 1), got {self.confidence}")
        if self.n_resamples < 100:
            raise ValueError(f"n_resamples: must be at least 100, got {self.n_resamples}")
        if not (self.noise_floor >= 0 and np.isfinite(self.noise_floor)):
            raise ValueError(f"noise_floor: must be finite and >= 0, got {self.noise_floor}")
        if not 0 <= self.max_control_bias < 1:
            raise ValueError(f"max_control_bias: must be in [0, 1), got {self.max_control_bias}")


@dataclass(frozen=True)
class Verdict:
    """The evidence for one candidate against the baseline, and whether it clears every threshold."""

    significant: bool
    p_value: float  # Welch, two-sided; Holm-adjusted when it came from validate_front
    cohens_d: float  # > 0: candidate better
    speedup: float  # ratio of means, > 1: candidate better
    ci_low: float
    ci_high: float
    n_baseline: int
    n_candidate: int
    failed: tuple[str, ...] = ()  # the thresholds it missed, in words


def welch_t(baseline: Sequence[float], candidate: Sequence[float]) -> tuple[float, float]:
    """(t, two-sided p) of Welch's unequal-variance t-test; t > 0 when the baseline mean is larger."""
    b, c = _sample(baseline, "baseline"), _sample(candidate, "candidate")
    result = stats.ttest_ind(b, c, equal_var=False)
    return float(result.statistic), float(result.pvalue)


def cohens_d(baseline: Sequence[float], candidate: Sequence[float], *, direction: Direction = "min") -> float:
    """Difference of means over the pooled standard deviation (ddof=1 each), > 0 when the candidate is better."""
    b, c = _sample(baseline, "baseline"), _sample(candidate, "candidate")
    pooled = np.sqrt(((b.size - 1) * b.var(ddof=1) + (c.size - 1) * c.var(ddof=1)) / (b.size + c.size - 2))
    gain = (b.mean() - c.mean()) if direction == "min" else (c.mean() - b.mean())
    if pooled == 0:
        return 0.0 if gain == 0 else float(np.copysign(np.inf, gain))
    return float(gain / pooled)


def speedup_ci(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    direction: Direction = "min",
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(speedup of means, CI low, CI high) with a seeded BCa bootstrap, resampling each sample independently.

    Two constant samples have a point-mass bootstrap: the interval is the point itself. Where BCa is
    undefined otherwise, the percentile interval is used.
    """
    b, c = _sample(baseline, "baseline"), _sample(candidate, "candidate")

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        mx, my = np.mean(x, axis=axis), np.mean(y, axis=axis)
        return np.asarray(mx / my if direction == "min" else my / mx)

    point = float(ratio(b, c))
    if b.std() == 0 and c.std() == 0:
        return point, point, point
    for method in ("BCa", "percentile"):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.DegenerateDataWarning)
            res = stats.bootstrap((b, c), ratio, n_resamples=n_resamples, confidence_level=confidence,
                                  method=method, vectorized=True, rng=np.random.default_rng(seed))
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if np.isfinite(low) and np.isfinite(high):
            return point, low, high
    return point, float("nan"), float("nan")


def holm(p_values: ArrayLike) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (scipy's ``false_discovery_control`` is Benjamini-Hochberg, not Holm).

    Sorted ascending, the i-th smallest (0-based) of m is multiplied by (m - i); adjusted values are made
    monotone with a running maximum and capped at 1. NaN stays NaN and does not count towards m.
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    order = valid[np.argsort(p[valid], kind="stable")]
    m = order.size
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return out


def compare(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    direction: Direction = "min",
    thresholds: Thresholds | None = None,
) -> Verdict:
    """Judge one candidate's timings against the baseline's."""
    thresholds = Thresholds() if thresholds is None else thresholds
    _, p = welch_t(baseline, candidate)
    return _judge(baseline, candidate, p, direction, thresholds)


def validate_front(
    baseline: Sequence[float],
    candidates: Mapping[int, Sequence[float]],
    *,
    direction: Direction = "min",
    thresholds: Thresholds | None = None,
) -> pd.DataFrame:
    """Judge many candidates at once (candidate_id -> timings), with Holm-adjusted p-values.

    One row per candidate in the given order: ``candidate_id``, ``n``, ``mean``, ``speedup``, ``ci_low``,
    ``ci_high``, ``cohens_d``, ``p_value`` (raw), ``p_holm``, ``significant`` and ``failed``.
    """
    thresholds = Thresholds() if thresholds is None else thresholds
    ids = list(candidates)
    raw = np.array([welch_t(baseline, candidates[i])[1] for i in ids])
    adjusted = holm(raw)
    rows = []
    for cid, p, p_adj in zip(ids, raw, adjusted, strict=True):
        v = _judge(baseline, candidates[cid], float(p_adj), direction, thresholds)
        rows.append({"candidate_id": cid, "n": v.n_candidate, "mean": float(np.mean(candidates[cid])),
                     "speedup": v.speedup, "ci_low": v.ci_low, "ci_high": v.ci_high, "cohens_d": v.cohens_d,
                     "p_value": float(p), "p_holm": float(p_adj), "significant": v.significant,
                     "failed": "; ".join(v.failed)})
    columns = ["candidate_id", "n", "mean", "speedup", "ci_low", "ci_high", "cohens_d", "p_value", "p_holm",
               "significant", "failed"]
    return pd.DataFrame(rows, columns=columns)


def _judge(baseline: Sequence[float], candidate: Sequence[float], p: float, direction: Direction,
           thresholds: Thresholds) -> Verdict:
    d = cohens_d(baseline, candidate, direction=direction)
    speedup, low, high = speedup_ci(baseline, candidate, direction=direction, confidence=thresholds.confidence,
                                    n_resamples=thresholds.n_resamples, seed=thresholds.seed)
    failed = []
    if not p < thresholds.alpha:
        failed.append(f"p={p:.3g} not < {thresholds.alpha}")
    if not d > thresholds.min_effect:
        failed.append(f"d={d:.3g} not > {thresholds.min_effect}")
    need = thresholds.min_speedup_low + thresholds.noise_floor
    if not low > need:
        floor = f" (1 + noise floor {thresholds.noise_floor:.4g})" if thresholds.noise_floor else ""
        failed.append(f"speedup CI low={low:.4g} not > {need:.4g}{floor}")
    return Verdict(significant=not failed, p_value=p, cohens_d=d, speedup=speedup, ci_low=low, ci_high=high,
                   n_baseline=len(baseline), n_candidate=len(candidate), failed=tuple(failed))


@dataclass(frozen=True)
class ControlCheck:
    """The baseline-vs-baseline control of one shape, judged two-sided, and the noise floor it measures.

    Rule: the control *differs* when Welch's two-sided p < alpha (raw, not Holm-adjusted: a gate errs
    towards stopping) or when its bootstrap CI at confidence 1 - alpha excludes 1, in either direction; both
    tests then run at the same level. The noise floor is the largest deviation from 1 that the control's CI
    allows, ``max(|1 - ci_low|, |1 - ci_high|)``; ``deviation`` is the point ``|1 - speedup|``, and its CI is
    ``[0, floor]`` when the CI holds 1 (otherwise the CI's distances to 1, sorted). A control that differs is
    *unreliable* unless its floor is at most ``max_control_bias``: then it is ``biased`` (two identical arms land
    apart by a measured amount, which every candidate of the shape must clear) and the shape keeps its verdicts.
    """

    reliable: bool
    speedup: float
    ci_low: float
    ci_high: float
    p_value: float
    deviation: float
    deviation_low: float
    floor: float
    reason: str  # one line; empty when reliable
    biased: bool = False  # differs from the baseline, by no more than the bound: its floor is the bar


def judge_control(baseline: Sequence[float], control: Sequence[float], *,
                  thresholds: Thresholds | None = None) -> ControlCheck:
    """Is the control (the baseline timed again as if it were a candidate) indistinguishable from the baseline?"""
    thresholds = Thresholds() if thresholds is None else thresholds
    _, p = welch_t(baseline, control)
    speedup, low, high = speedup_ci(baseline, control, confidence=1 - thresholds.alpha,
                                    n_resamples=thresholds.n_resamples, seed=thresholds.seed)
    problems = []
    if p < thresholds.alpha:
        problems.append(f"p={p:.2g} < {thresholds.alpha}")
    if np.isfinite(low) and (low > 1 or high < 1):
        problems.append(f"{1 - thresholds.alpha:.0%} CI [{low:.4f}, {high:.4f}] excludes 1")
    finite = bool(np.isfinite(low) and np.isfinite(high))
    if not finite:
        problems.append("no bootstrap CI")
    distances = sorted((abs(1 - low), abs(1 - high)))
    holds_one = bool(low <= 1 <= high)
    biased = bool(problems) and finite and distances[1] <= thresholds.max_control_bias
    if biased:
        problems = []
    reason = ""
    if problems:
        side = "faster" if speedup > 1 else "slower"
        bound = (f", off by up to {distances[1]:.2%}, over the {thresholds.max_control_bias:.2%} a bias may be"
                 if finite else "")
        reason = (f"the baseline-vs-baseline control came out {speedup:.4f}x ({side}; " + ", ".join(problems)
                  + bound + "): the arms are not timed alike, so no verdict of this shape is reliable")
    return ControlCheck(reliable=not problems, speedup=speedup, ci_low=low, ci_high=high, p_value=p,
                        deviation=abs(1 - speedup), deviation_low=0.0 if holds_one else distances[0],
                        floor=float(distances[1]) if np.isfinite(distances[1]) else float("nan"), reason=reason,
                        biased=biased)


@dataclass(frozen=True)
class Attribution:
    """One candidate's speedup split in two: total = config-only x ACF-only (ratios of means, exactly)."""

    total: Verdict  # candidate vs baseline
    config_only: Verdict  # the same config without ACF (the twin) vs baseline
    acf_only: Verdict  # candidate vs its twin: what the ACF adds on top of its own config


def attribute(baseline: Sequence[float], twin: Sequence[float], candidate: Sequence[float], *,
              thresholds: Thresholds | None = None, direction: Direction = "min") -> Attribution:
    """Total, config-only and ACF-only verdicts of a candidate, from timings of three arms of one shape.

    Each is a plain :func:`compare` (raw p); callers Holm-adjust across candidates where they judge a family.
    """
    thresholds = Thresholds() if thresholds is None else thresholds
    return Attribution(total=compare(baseline, candidate, direction=direction, thresholds=thresholds),
                       config_only=compare(baseline, twin, direction=direction, thresholds=thresholds),
                       acf_only=compare(twin, candidate, direction=direction, thresholds=thresholds))


def _sample(values: Sequence[float], name: str) -> np.ndarray:
    """A 1-D float array of at least two finite values; anything else is a caller bug, named."""
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size < 2:
        raise ValueError(f"{name}: need at least 2 timings, got {x.size}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name}: timings must be finite, got {int((~np.isfinite(x)).sum())} NaN/inf")
    return x
