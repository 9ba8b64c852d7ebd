"""Statistics against scipy and hand-computed values, and the false-positive rate under the null."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from paretotune.pareto import Thresholds, cohens_d, compare, holm, speedup_ci, validate_front, welch_t

# repeated timings in ms, in the range of the H200 matmul baseline (0.209 ... 0.243 ms)
BASELINE = [0.209, 0.243, 0.221, 0.215, 0.238, 0.226, 0.219, 0.231, 0.224, 0.212]
CANDIDATE = [0.201, 0.198, 0.205, 0.211, 0.196, 0.203, 0.199, 0.207, 0.202, 0.200]


def test_welch_matches_scipy_and_formula() -> None:
    t, p = welch_t(BASELINE, CANDIDATE)
    ref = stats.ttest_ind(BASELINE, CANDIDATE, equal_var=False)
    assert t == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)
    b, c = np.array(BASELINE), np.array(CANDIDATE)
    se = np.sqrt(b.var(ddof=1) / b.size + c.var(ddof=1) / c.size)
    assert t == pytest.approx((b.mean() - c.mean()) / se)


def test_cohens_d_known_values() -> None:
    # means 5 and 3, both variances 2.5: pooled sd sqrt(2.5)
    assert cohens_d([3, 4, 5, 6, 7], [1, 2, 3, 4, 5]) == pytest.approx(2 / np.sqrt(2.5))
    assert cohens_d([3, 4, 5, 6, 7], [1, 2, 3, 4, 5], direction="max") == pytest.approx(-2 / np.sqrt(2.5))
    # unequal sizes weight each variance by its degrees of freedom
    a, b = np.array([1.0, 2, 3, 4]), np.array([2.0, 4, 6])
    pooled = np.sqrt((3 * a.var(ddof=1) + 2 * b.var(ddof=1)) / 5)
    assert cohens_d(b, a) == pytest.approx((b.mean() - a.mean()) / pooled)
    assert cohens_d([1, 1], [1, 1]) == 0.0


def test_speedup_ci_matches_scipy_bootstrap() -> None:
    point, low, high = speedup_ci(BASELINE, CANDIDATE, seed=5, n_resamples=3000)
    assert point == pytest.approx(np.mean(BASELINE) / np.mean(CANDIDATE))
    ref = stats.bootstrap((np.array(BASELINE), np.array(CANDIDATE)),
                          lambda x, y, axis=-1: x.mean(axis=axis) / y.mean(axis=axis),
                          n_resamples=3000, vectorized=True, rng=np.random.default_rng(5))
    assert (low, high) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high))
    assert low < point < high
    assert speedup_ci(BASELINE, CANDIDATE, seed=5, n_resamples=3000) == (point, low, high)  # seeded
    # "max" objectives: speedup is candidate / baseline
    assert speedup_ci([1.0, 1.2], [2.0, 2.4], direction="max")[0] == pytest.approx(2.0)
    assert speedup_ci([1.0, 1.0], [2.0, 2.0]) == (0.5, 0.5, 0.5)


def test_holm_known_values() -> None:
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(holm([0.5, 0.9]), [1.0, 1.0])
    out = holm([0.01, np.nan])
    assert out[0] == pytest.approx(0.01) and np.isnan(out[1])
    assert holm([]).size == 0


def test_clear_speedup_is_significant() -> None:
    verdict = compare(BASELINE, CANDIDATE)
    assert verdict.significant, verdict.failed
    assert verdict.speedup > 1 and verdict.ci_low > 1 and verdict.cohens_d > 0.5 and verdict.p_value < 0.01


def test_each_threshold_can_fail() -> None:
    slower = compare(CANDIDATE, BASELINE)
    assert not slower.significant and slower.speedup < 1 and len(slower.failed) == 2  # p alone is fine
    strict = compare(BASELINE, CANDIDATE, thresholds=Thresholds(min_speedup_low=1.2))
    assert not strict.significant and strict.failed[0].startswith("speedup CI low")
    with pytest.raises(ValueError, match="alpha"):
        Thresholds(alpha=1.5)
    with pytest.raises(ValueError, match="at least 2"):
        compare([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        compare([1.0, np.nan], [1.0, 2.0])


@pytest.mark.parametrize("distribution", ["normal", "lognormal"])
def test_baseline_against_itself_is_not_significant(distribution: str) -> None:
    """Two samples of one distribution: judged 'not significant' in at least 95% of seeded repeats."""
    repeats, significant = 200, 0
    thresholds = Thresholds(n_resamples=500)
    for seed in range(repeats):
        rng = np.random.default_rng(seed)
        if distribution == "normal":
            a, b = rng.normal(0.225, 0.01, size=(2, 20))
        else:  # right-skewed, like real GPU timings
            a, b = 0.2 * rng.lognormal(0.0, 0.08, size=(2, 20))
        significant += compare(a, b, thresholds=thresholds).significant
    assert significant / repeats <= 0.05


def test_validate_front_applies_holm() -> None:
    rng = np.random.default_rng(1)
    baseline = rng.normal(1.0, 0.05, 30)
    candidates = {7: rng.normal(0.9, 0.05, 30), 8: rng.normal(1.0, 0.05, 30), 9: rng.normal(0.97, 0.05, 30)}
    table = validate_front(baseline, candidates)
    assert table["candidate_id"].tolist() == [7, 8, 9]
    np.testing.assert_allclose(table["p_holm"], holm(table["p_value"]))
    assert (table["p_holm"] >= table["p_value"]).all()
    assert table["significant"].tolist() == [True, False, False]


def test_holm_can_overturn_a_single_verdict() -> None:
    rng = np.random.default_rng(12)
    baseline, marginal = rng.normal(1.0, 0.05, 30), rng.normal(0.955, 0.05, 30)
    alone = compare(baseline, marginal)
    assert alone.significant and 0.005 < alone.p_value < 0.01
    others = {1: np.random.default_rng(0).normal(0.8, 0.05, 30), 2: np.random.default_rng(1).normal(1.0, 0.05, 30)}
    table = validate_front(baseline, {**others, 3: marginal}).set_index("candidate_id")
    assert table.loc[3, "p_value"] == pytest.approx(alone.p_value)
    assert table.loc[3, "p_holm"] > 0.01 and not table.loc[3, "significant"]
    assert table.loc[1, "significant"]
