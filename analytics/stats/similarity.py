"""Set and list similarity shared by the autocomplete and personalization audits (docs/method.md)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from collections.abc import Set as AbstractSet


def jaccard(a: AbstractSet[Hashable], b: AbstractSet[Hashable]) -> float:
    """Jaccard index: size of the intersection over size of the union, in [0, 1].

    Two empty sets give 1.0: they are identical, so a distance defined as
    1 - jaccard is 0 (nothing changed) rather than undefined.
    """
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def damerau_levenshtein(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Edit distance with insertions, deletions, substitutions and adjacent transpositions.

    The unrestricted distance (Lowrance-Wagner), not the "optimal string alignment"
    variant: it is a metric (the triangle inequality holds), so distances between
    result lists can be compared and added. Hannak et al.'s example: [a, b, c] vs
    [c, b] is 2 (delete a, swap b and c).
    """
    inf = len(a) + len(b)
    last_row: dict[Hashable, int] = {}  # the last row where each item occurred in a
    d = [[inf] * (len(b) + 2) for _ in range(len(a) + 2)]
    for i in range(len(a) + 1):
        d[i + 1][0], d[i + 1][1] = inf, i
    for j in range(len(b) + 1):
        d[0][j + 1], d[1][j + 1] = inf, j
    for i in range(1, len(a) + 1):
        last_col = 0  # the last column in this row where a[i-1] matched
        for j in range(1, len(b) + 1):
            k, cost = last_row.get(b[j - 1], 0), 0 if a[i - 1] == b[j - 1] else 1
            l_ = last_col
            if cost == 0:
                last_col = j
            d[i + 1][j + 1] = min(
                d[i][j] + cost,  # substitute (or keep)
                d[i + 1][j] + 1,  # insert
                d[i][j + 1] + 1,  # delete
                d[k][l_] + (i - k - 1) + 1 + (j - l_ - 1),  # transpose, with the edits between
            )
        last_row[a[i - 1]] = i
    return d[len(a) + 1][len(b) + 1]


def changed_at_rank(a: Sequence[Hashable], b: Sequence[Hashable], ranks: int = 10) -> list[bool]:
    """For rank 1..n: do the two lists hold different results there? n is the last rank
    either list fills (at most ``ranks``), so the list has one entry per result at rank r.

    Hannak et al. divide the results changed at rank r "by the total number of results at
    rank r": a rank empty on both pages holds no result and is no comparison, so it is left
    out rather than counted as unchanged. A rank filled on one page and empty on the other
    is a result that changed (the pair's pages differ there).
    """
    n = min(ranks, max(len(a), len(b)))
    return [(a[i] if i < len(a) else None) != (b[i] if i < len(b) else None) for i in range(n)]
