"""RAI comparisons across engines and lengths (docs/method.md, "Across engines and lengths").

Two results of the paper that need more than one network: the rank correlation of the
association networks' degrees between Google and Bing (§4.4, in-degree rho = 0.49, out-degree
rho = 0.38), and the test of survival by query length (§4.3, "no significant differences").
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from scipy import stats

Degree = Literal["in", "out"]
Over = Literal["all", "both"]
LENGTH_CAP = 6
"""Suggestions of this many words or more form one group (the longest are few)."""


@dataclass(frozen=True)
class Correlation:
    rho: float  # Spearman's rank correlation; NaN when undefined
    p: float  # two-sided p-value; NaN when undefined
    n: int  # n-grams ranked


def degrees(edges: Iterable[tuple[str, str]], degree: Degree) -> dict[str, int]:
    """Degree of every n-gram of an association network given its (source, target) edges:
    in-degree = distinct other sources pointing at it, out-degree = distinct other targets;
    a self-loop is no link. Every n-gram on an edge is present, with 0 if it has none."""
    neighbours: defaultdict[str, set[str]] = defaultdict(set)
    for source, target in edges:
        neighbours[source]
        neighbours[target]
        if source != target:
            if degree == "in":
                neighbours[target].add(source)
            else:
                neighbours[source].add(target)
    return {ngram: len(others) for ngram, others in neighbours.items()}


def degree_correlation(a: Mapping[str, int], b: Mapping[str, int], over: Over = "all") -> Correlation:
    """Spearman correlation of two engines' degrees of the same n-grams (RAI §4.4).

    The paper "used the in- and out-degree to rank all of the n-grams we observed": by
    default (``over="all"``) every n-gram of either network, with degree 0 in the network
    that lacks it; ``over="both"`` keeps the n-grams present in both. Ranks, so Spearman
    (the paper's rho); ties take their mean rank.
    """
    if over not in ("all", "both"):
        raise ValueError("over must be 'all' or 'both'")
    ngrams = sorted(a.keys() | b.keys()) if over == "all" else sorted(a.keys() & b.keys())
    x = [a.get(g, 0) for g in ngrams]
    y = [b.get(g, 0) for g in ngrams]
    if len(ngrams) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return Correlation(math.nan, math.nan, len(ngrams))
    result = stats.spearmanr(x, y)
    return Correlation(float(result.statistic), float(result.pvalue), len(ngrams))


@dataclass(frozen=True)
class GroupTest:
    statistic: float  # Kruskal-Wallis H; NaN when undefined
    p: float  # NaN when undefined
    groups: int  # word-count groups with at least one suggestion
    n: int  # suggestions


def length_group(words: int, cap: int = LENGTH_CAP) -> int:
    """The word-count group of a suggestion: its words, ``cap`` or more pooled."""
    return min(words, cap)


def survival_by_length(suggestions: Iterable[tuple[int, int]], cap: int = LENGTH_CAP) -> GroupTest:
    """Does survival differ with query length? (RAI §4.3: "no significant differences").

    The paper names no test. ``suggestions`` are (words, days survived) per suggestion;
    they are grouped by word count (``cap`` or more pooled) and compared with a
    Kruskal-Wallis H test: more than two groups, and survival days are skewed counts with
    many ties, so a rank test (tie-corrected) rather than an ANOVA on means.
    """
    groups: defaultdict[int, list[int]] = defaultdict(list)
    for words, days in suggestions:
        groups[length_group(words, cap)].append(days)
    n = sum(len(g) for g in groups.values())
    samples = [groups[k] for k in sorted(groups)]
    if len(samples) < 2 or len({d for g in samples for d in g}) < 2:
        return GroupTest(math.nan, math.nan, len(samples), n)
    result = stats.kruskal(*samples)
    return GroupTest(float(result.statistic), float(result.pvalue), len(samples), n)
