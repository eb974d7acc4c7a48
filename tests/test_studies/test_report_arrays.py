"""The report's array helpers give what their plain counterparts give."""

from __future__ import annotations

import numpy as np

from analytics.stats.bootstrap import ReplicateWeights, replicate_weights, sorted_unique, weights_for_keys
from studies.arrangement.read.raking import KeyedWeights


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


def test_report_arrays_of_split_shuffled_rows_give_the_grouped_rows_tables() -> None:
    """The study-wide statement reads rows as stored (an install and arm may span rows, in
    any order); the tables equal those of one summed row per install and arm, sorted."""
    import pyarrow as pa

    from analytics.stats.arrangement_table import figure3_arrays
    from studies.arrangement.arrays import report_arrays

    rng = np.random.default_rng(3)
    keys = np.unique(rng.integers(0, 2**64 - 1, 60, dtype=np.uint64))
    arms = ["control", "swap_1_2", "swap_2_3"]
    grouped = [(k, a, rng.poisson(20, 11)) for k in keys.tolist() for a in arms if rng.random() < 0.8]

    def table(rows: list) -> pa.Table:
        return pa.table(
            {
                "install_key": pa.array([k for k, _, _ in rows], pa.uint64()),
                "arm": [a for _, a, _ in rows],
                "n_clicks": pa.array([v[:10].tolist() for _, _, v in rows], pa.list_(pa.uint64())),
                "n_units": [float(v[:10].sum() + v[10]) for _, _, v in rows],
                **{f"e{i}": [float(v[i - 2]) for _, _, v in rows] for i in range(2, 6)},
            }
        )

    split = []  # each grouped row as two rows whose counts add up to it
    for k, a, v in grouped:
        part = rng.binomial(v, 0.5)
        split += [(k, a, part), (k, a, v - part)]
    order = rng.permutation(len(split))
    shuffled = [split[i] for i in order]
    want = report_arrays(table(grouped), 6, elements=True)
    got = report_arrays(table(shuffled), 6, elements=True)
    assert got[0].keys.size == 2 * want[0].keys.size and bool(np.all(np.diff(got[0].keys.astype(float)) >= 0))
    for mine, theirs, ranks in ((got[0], want[0], 6), (got[1], want[1], 5)):
        assert mine is not None and theirs is not None
        a, b = figure3_arrays(mine, ranks, 50, seed=1), figure3_arrays(theirs, ranks, 50, seed=1)
        assert [(r.arm, r.units, r.installs) for r in a] == [(r.arm, r.units, r.installs) for r in b]
        assert [[e.to_json() for e in r.ctr + r.delta + r.beta] for r in a] == [
            [e.to_json() for e in r.ctr + r.delta + r.beta] for r in b
        ]
