from __future__ import annotations

from analytics.stats.srm import srm_test


def test_52_48_split_on_20k_units_is_a_mismatch() -> None:
    result = srm_test({"control": 10_400, "swap_1_2": 9_600}, {"control": 0.5, "swap_1_2": 0.5})
    assert result.mismatch and result.p_value < 1e-6


def test_a_fair_split_is_not() -> None:
    result = srm_test({"control": 10_030, "swap_1_2": 9_970}, {"control": 0.5, "swap_1_2": 0.5})
    assert not result.mismatch and result.p_value > 0.5


def test_unequal_weights_are_respected() -> None:
    assert not srm_test({"a": 8_000, "b": 2_000}, {"a": 0.8, "b": 0.2}).mismatch
    assert srm_test({"a": 5_000, "b": 5_000}, {"a": 0.8, "b": 0.2}).mismatch


def test_units_in_an_unconfigured_arm_are_a_mismatch() -> None:
    assert srm_test({"a": 10, "ghost": 1}, {"a": 1.0}).mismatch
    assert not srm_test({}, {"a": 1.0}).mismatch
