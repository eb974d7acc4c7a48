from __future__ import annotations

import numpy as np
import pytest

from analytics.stats.bootstrap import (
    POISSON1_CDF,
    percentile_interval,
    poisson1,
    replicate_ratios,
    resample_installs,
    unit_uniform,
    weights,
)


def test_poisson1_weights_have_mean_and_variance_one() -> None:
    assert list(POISSON1_CDF) == sorted(POISSON1_CDF) and POISSON1_CDF[-1] > 0.99999
    w = np.array([poisson1(unit_uniform(f"install-{i}", b, seed=3)) for i in range(400) for b in range(50)])
    assert w.mean() == pytest.approx(1.0, abs=0.02)
    assert w.var() == pytest.approx(1.0, abs=0.05)


def test_weights_are_deterministic_and_seeded() -> None:
    ids = ["a1b2c3d4e5", "f6g7h8i9j0"]
    assert np.array_equal(weights(ids, 20, seed=1), weights(ids, 20, seed=1))
    assert not np.array_equal(weights(ids, 20, seed=1), weights(ids, 20, seed=2))


def test_streamed_poisson_ci_matches_offline_resampling() -> None:
    """Poisson(1) cluster weights vs 2,000 resamples of installs: bounds within 0.01."""
    rng = np.random.default_rng(7)
    n = 1500
    units = rng.integers(5, 60, size=n).astype(float)  # clicks per install: clustered, uneven
    p = np.clip(rng.normal(0.43, 0.08, size=n), 0, 1)  # each person has their own c1 rate
    clicks = rng.binomial(units.astype(int), p).astype(float)
    ids = [f"install-{i:05d}" for i in range(n)]
    streamed = percentile_interval(replicate_ratios(weights(ids, 200, seed=11), clicks, units))
    offline = percentile_interval(replicate_ratios(resample_installs(n, 2000, seed=5), clicks, units))
    assert streamed[0] == pytest.approx(offline[0], abs=0.01)
    assert streamed[1] == pytest.approx(offline[1], abs=0.01)
    assert streamed[0] < clicks.sum() / units.sum() < streamed[1]


def test_replicates_without_units_are_ignored() -> None:
    w = np.array([[0.0, 1.0], [0.0, 2.0]])
    ratios = replicate_ratios(w, np.array([1.0, 1.0]), np.array([2.0, 2.0]))
    assert np.isnan(ratios[0]) and ratios[1] == pytest.approx(0.5)
    assert percentile_interval(ratios) == (pytest.approx(0.5), pytest.approx(0.5))


def test_vectorized_weights_equal_the_scalar_reference_in_any_order() -> None:
    """The numpy weights (cached per install) equal ``poisson1(unit_uniform(...))``
    whichever installs were asked for before and in whatever order."""
    from analytics.stats.bootstrap import WeightCache

    cache = WeightCache(max_installs=50)
    first = [f"install-{i}" for i in range(30)]
    later = [f"install-{i}" for i in range(60, 20, -1)]  # overlaps, reversed, overflows the cap
    for ids in (first, later, first[::3]):
        got = cache.get(ids, 25, seed=9)
        expected = np.array([[poisson1(unit_uniform(i, b, seed=9)) for b in range(25)] for i in ids])
        assert got.shape == (len(ids), 25) and np.array_equal(got, expected)


def test_weight_cache_answers_in_the_order_asked_across_misses_repeats_and_eviction() -> None:
    import numpy as np

    from analytics.stats.bootstrap import WeightCache, _weight_rows

    rng = np.random.default_rng(5)
    keys = rng.integers(0, 2**63, 50, dtype=np.uint64)
    cache = WeightCache(max_installs=60)
    first = cache.for_keys(keys[:30], 20, 0)
    assert np.array_equal(first, _weight_rows(keys[:30], 20))
    asked = np.concatenate([keys[40:], keys[5:35], keys[5:8]])  # new, known, and repeats
    assert np.array_equal(cache.for_keys(asked, 20, 0), _weight_rows(asked, 20))
    evicting = rng.integers(0, 2**63, 45, dtype=np.uint64)  # more than the cache keeps
    assert np.array_equal(cache.for_keys(evicting, 20, 0), _weight_rows(evicting, 20))
    assert np.array_equal(cache.for_keys(keys[:0], 20, 0), _weight_rows(keys[:0], 20))


def test_weight_cache_grows_install_by_install_and_keeps_every_row() -> None:
    """Installs arriving a few at a time (a live study) are appended, not re-sorted with
    their rows: every answer still equals the rows computed afresh, and the cached keys come
    out sorted with their own rows."""
    import numpy as np

    from analytics.stats.bootstrap import WeightCache, _weight_rows

    rng = np.random.default_rng(8)
    pool = rng.integers(0, 2**63, 400, dtype=np.uint64)
    cache = WeightCache(max_installs=1000)
    seen: set[int] = set()
    for step in range(1, 41):
        asked = rng.permutation(pool[: step * 10])[: rng.integers(1, step * 10 + 1)]
        seen.update(asked.tolist())
        assert np.array_equal(cache.for_keys(asked, 30, 3), _weight_rows(asked, 30))
    keys, rows = cache.cached(30, 3)
    assert np.all(keys[1:] > keys[:-1]) and set(keys.tolist()) == seen
    assert np.array_equal(rows, _weight_rows(keys, 30))


def test_weight_cache_answers_more_installs_than_it_keeps() -> None:
    """A call with more distinct installs than the cache keeps is answered, and kept out."""
    import numpy as np

    from analytics.stats.bootstrap import WeightCache, _weight_rows

    keys = np.random.default_rng(2).integers(0, 2**63, 25, dtype=np.uint64)
    cache = WeightCache(max_installs=10)
    assert np.array_equal(cache.for_keys(keys[:4], 12, 0), _weight_rows(keys[:4], 12))
    assert np.array_equal(cache.for_keys(keys, 12, 0), _weight_rows(keys, 12))
    assert cache.cached(12, 0)[0].size <= 10
    assert np.array_equal(cache.for_keys(keys[20:], 12, 0), _weight_rows(keys[20:], 12))
