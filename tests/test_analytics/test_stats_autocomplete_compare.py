"""The RAI comparisons across engines (degree correlation) and lengths (survival test)."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from analytics.stats.autocomplete_compare import (
    degree_correlation,
    degrees,
    length_group,
    survival_by_length,
)


def test_degrees_count_distinct_other_neighbours() -> None:
    edges = [("gov", "email"), ("gov", "email"), ("gov", "wife"), ("wife", "email"), ("email", "email")]
    assert degrees(edges, "in") == {"gov": 0, "email": 2, "wife": 1}
    assert degrees(edges, "out") == {"gov": 2, "email": 0, "wife": 1}


def test_degree_correlation_over_all_ngrams_counts_absent_as_zero() -> None:
    google = {"governor": 9, "email": 7, "twitter": 5, "wife": 2, "gov": 1}
    bing = {"governor": 8, "email": 3, "twitter": 4, "bio": 2}
    got = degree_correlation(google, bing)
    x = [google.get(g, 0) for g in sorted(google.keys() | bing.keys())]
    y = [bing.get(g, 0) for g in sorted(google.keys() | bing.keys())]
    assert got.n == 6
    assert got.rho == pytest.approx(stats.spearmanr(x, y).statistic)
    both = degree_correlation(google, bing, over="both")
    assert both.n == 3 and both.rho == pytest.approx(0.5)


def test_degree_correlation_undefined_without_variation() -> None:
    assert math.isnan(degree_correlation({"a": 1, "b": 1, "c": 1}, {"a": 2, "b": 3, "c": 1}).rho)
    with pytest.raises(ValueError):
        degree_correlation({}, {}, over="some")  # type: ignore[arg-type]


def test_degree_correlation_recovers_a_planted_relation() -> None:
    rng = random.Random(4)
    google = {f"n{i}": rng.randint(0, 30) for i in range(400)}
    bing = {g: k + rng.randint(0, 30) for g, k in google.items()}
    got = degree_correlation(google, bing)
    assert 0.4 < got.rho < 0.9 and got.p < 1e-6


def test_survival_by_length_no_difference_when_drawn_alike() -> None:
    rng = random.Random(7)
    same = [(rng.randint(1, 8), rng.randint(1, 40)) for _ in range(600)]
    assert survival_by_length(same).p > 0.01
    longer_live_longer = [(w, d + 10 * w) for w, d in same]
    test = survival_by_length(longer_live_longer)
    assert test.p < 1e-6 and test.groups == 6 and test.n == 600


def test_survival_by_length_pools_long_suggestions_and_matches_scipy() -> None:
    rows = [(1, 3), (1, 5), (2, 4), (2, 9), (7, 1), (6, 2), (9, 8)]
    assert length_group(9) == 6
    want = stats.kruskal([3, 5], [4, 9], [1, 2, 8])
    got = survival_by_length(rows)
    assert (got.groups, got.n) == (3, 7)
    assert got.statistic == pytest.approx(want.statistic) and got.p == pytest.approx(want.pvalue)
    assert math.isnan(survival_by_length([(1, 3), (1, 4)]).p)  # one group: nothing to compare
