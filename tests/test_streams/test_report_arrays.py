"""The report's array helpers give what their plain counterparts give."""

from __future__ import annotations

import numpy as np

from analytics.reports.experiment import KeyedWeights
from analytics.stats.bootstrap import ReplicateWeights, replicate_weights, sorted_unique, weights_for_keys


def test_sorted_unique_is_np_unique_for_sorted_and_unsorted_keys() -> None:
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 50, 400).astype(np.uint64)
    for k in (keys, np.sort(keys), np.zeros(0, np.uint64)):
        got, at = sorted_unique(k)
        want, want_at = np.unique(k, return_inverse=True)
        assert np.array_equal(got, want) and np.array_equal(at, want_at)


def test_replicate_sums_equal_the_gathered_weight_product() -> None:
    rng = np.random.default_rng(2)
    everyone = np.unique(rng.integers(0, 2**64 - 1, 300, dtype=np.uint64))
    weights = ReplicateWeights(everyone, 200, 7)
    some = np.sort(rng.choice(everyone, 120, replace=False))
    values = rng.poisson(3, (some.size, 5)).astype(float)
    want = weights_for_keys(some, 200, 7).astype(float).T @ values
    assert np.array_equal(weights.sums(some, values), want)
    assert np.array_equal(weights.sums(everyone, np.ones((everyone.size, 1))), weights.matrix.sum(0)[:, None])
    assert replicate_weights(everyone[::-1], 200, 7) is replicate_weights(everyone, 200, 7)  # kept


def test_keyed_weights_look_up_like_a_dict_with_default_one() -> None:
    keys = [5, 3, 9, 3]
    weights = np.array([0.5, 2.0, 1.5, 4.0])
    table = KeyedWeights.of(keys, weights)
    as_dict = dict(zip(keys, weights.tolist(), strict=True))
    asked = np.array([3, 4, 5, 9, 10, 0], dtype=np.uint64)
    assert table.lookup(asked).tolist() == [as_dict.get(int(k), 1.0) for k in asked]
    assert KeyedWeights.of([], np.zeros(0)).lookup(asked).tolist() == [1.0] * 6


def test_integer_thresholds_decide_as_the_uniforms_do_at_every_boundary() -> None:
    from analytics.stats.bootstrap import POISSON1_CDF, THRESHOLDS

    for cdf, threshold in zip(POISSON1_CDF, THRESHOLDS.tolist(), strict=True):
        xs = np.arange(threshold - 5000, threshold + 5000, 3, dtype=np.uint64)
        uniforms = xs.astype(np.float64) * 2.0**-64
        assert np.array_equal(uniforms >= cdf, xs >= np.uint64(threshold))
