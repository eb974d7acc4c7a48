from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.stats.similarity import jaccard

small_sets = st.frozensets(st.integers(0, 12), max_size=8)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({1, 2, 3}, {2, 3, 4}, 0.5),  # {2,3} / {1,2,3,4} = 2/4
        ({"a", "b", "c"}, {"a"}, 1 / 3),  # {a} / {a,b,c}
        ({"a"}, {"a"}, 1.0),
        ({"a", "b"}, {"c"}, 0.0),  # nothing shared
        ({"a"}, set(), 0.0),  # 0 / 1
        (set(), set(), 1.0),  # convention: two empty sets are identical
        (frozenset({"x", "y"}), {"y", "x"}, 1.0),  # set kinds mix
    ],
)
def test_jaccard_table(a: set[object], b: set[object], expected: float) -> None:
    assert jaccard(a, b) == pytest.approx(expected)


@given(small_sets, small_sets)
def test_jaccard_is_symmetric_and_a_share(a: frozenset[int], b: frozenset[int]) -> None:
    assert jaccard(a, b) == jaccard(b, a)
    assert 0.0 <= jaccard(a, b) <= 1.0


@given(small_sets)
def test_a_set_is_identical_to_itself(a: frozenset[int]) -> None:
    assert jaccard(a, a) == 1.0
