from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analytics.stats.similarity import jaccard

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


# --- Damerau-Levenshtein and changed-at-rank -------------------------------------------

from analytics.stats.similarity import changed_at_rank, damerau_levenshtein  # noqa: E402

lists = st.lists(st.sampled_from("abcdef"), max_size=7)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (["a", "b", "c"], ["c", "b"], 2),  # Hannak et al.: delete a, swap b and c
        ([], [], 0),
        (["a"], [], 1),
        (["a", "b"], ["b", "a"], 1),  # one transposition
        (["a", "b", "c"], ["a", "b", "c"], 0),
        (["a", "b", "c"], ["x", "y", "z"], 3),  # three substitutions
        (list("ca"), list("abc"), 2),  # unrestricted DL: "ca" -> "ac" -> "abc" (OSA says 3)
        (list("abcdef"), list("badcfe"), 3),  # three adjacent swaps
    ],
)
def test_damerau_levenshtein_table(a: list[str], b: list[str], expected: int) -> None:
    assert damerau_levenshtein(a, b) == expected


@given(lists, lists)
def test_damerau_levenshtein_symmetry_and_bounds(a: list[str], b: list[str]) -> None:
    d = damerau_levenshtein(a, b)
    assert d == damerau_levenshtein(b, a)
    assert abs(len(a) - len(b)) <= d <= max(len(a), len(b))
    assert (d == 0) == (a == b)


@given(lists)
def test_damerau_levenshtein_identity(a: list[str]) -> None:
    assert damerau_levenshtein(a, a) == 0


@given(lists, lists, lists)
def test_damerau_levenshtein_triangle_inequality(a: list[str], b: list[str], c: list[str]) -> None:
    assert damerau_levenshtein(a, c) <= damerau_levenshtein(a, b) + damerau_levenshtein(b, c)


def test_changed_at_rank() -> None:
    assert changed_at_rank(["a", "b", "c"], ["a", "c", "b"], ranks=4) == [False, True, True]
    assert changed_at_rank(["a"], ["a", "b"], ranks=3) == [False, True]


def test_changed_at_rank_leaves_out_ranks_empty_on_both_pages() -> None:
    """Hannak et al. divide by the results at rank r: a rank neither page fills is no result,
    not an unchanged one, so short pages do not dilute the share changed."""
    assert changed_at_rank(["a", "b"], ["b", "a"], ranks=10) == [True, True]
    assert changed_at_rank([], [], ranks=10) == []
    assert changed_at_rank(["a", "b", "c"], ["a"], ranks=2) == [False, True]
