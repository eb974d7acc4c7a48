"""Network structure of one crawl (RAI Figures 2-4), checked on a network worked out by hand."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from analytics.stats.autocomplete import Node, suggestion_sets
from analytics.stats.autocomplete_network import trim_crawl
from analytics.stats.autocomplete_structure import (
    NetworkNode,
    churn_query_words,
    network_structure,
    placed_sources,
    query_words,
    spearman_p,
)

ROOT = "scott walker"
# A crawl to depth 2 with an emergent root ("recount") and a namesake ("walker texas
# ranger") that links back into the root's network.
CRAWL = (
    Node(
        "scott walker",
        0,
        (
            (1, "scott walker"),
            (2, "scott walker wife"),
            (3, "scott walker recount"),
            (4, "walker texas ranger"),
        ),
    ),
    Node("scott walker wife", 1, ((1, "scott walker wife age"), (2, "scott walker recount")), "scott walker"),
    Node("scott walker recount", 1, ((1, "recount"), (2, "scott walker recount results")), "scott walker"),
    Node(
        "walker texas ranger", 1, ((1, "walker texas ranger cast"), (2, "scott walker wife")), "scott walker"
    ),
    Node("recount", 2, ((1, "recount definition"), (2, "recount scott walker")), "scott walker recount"),
    Node("walker texas ranger cast", 2, (), "walker texas ranger"),
    Node("scott walker wife age", 2, ((1, "scott walker wife age"),), "scott walker wife"),
    Node(
        "scott walker recount results",
        2,
        ((1, "scott walker recount results 2018"),),
        "scott walker recount",
    ),
)


def n(node: str, depth: int, rank: int, sub: bool, sugg: int, k_in: int, k_out: int, words: int, *ch: int):
    return NetworkNode(node, depth, rank, sub, sugg, k_in, k_out, words, tuple(ch))


def test_the_full_network_by_hand() -> None:
    assert network_structure(ROOT, CRAWL) == (
        n("scott walker", 0, 0, True, 4, 0, 3, 2, 1, 1, 1),
        n("scott walker wife", 1, 2, True, 2, 2, 2, 3, 1, 0),  # a merge point: the namesake links back
        n("scott walker recount", 1, 3, True, 2, 2, 2, 3, -2, 1),  # root and "wife" converge on it
        n("walker texas ranger", 1, 4, True, 2, 1, 2, 3, 1, 0),
        n("recount", 2, 1, True, 2, 1, 2, 1, 1, 2),
        n("scott walker wife age", 2, 1, True, 1, 1, 0, 4),  # its one suggestion is itself: no link
        n("walker texas ranger cast", 2, 1, True, 0, 1, 0, 4),
        n("scott walker recount results", 2, 2, True, 1, 1, 1, 4, 1),
        n("recount definition", 3, 1, False, 0, 1, 0, 2),
        n("scott walker recount results 2018", 3, 1, False, 0, 1, 0, 5),
        n("recount scott walker", 3, 2, False, 0, 1, 0, 3),
    )


def test_the_trimmed_network_by_hand() -> None:
    """Trimming drops the namesake and the emergent root with all below them: "wife" is no
    longer a merge point, and depth 3 keeps one node of three (the paper's Figure 2 effect)."""
    assert network_structure(ROOT, trim_crawl(ROOT, CRAWL)) == (
        n("scott walker", 0, 0, True, 3, 0, 2, 2, 1, 1),
        n("scott walker wife", 1, 2, True, 2, 1, 2, 3, 1, 0),
        n("scott walker recount", 1, 3, True, 1, 2, 1, 3, 1),
        n("scott walker wife age", 2, 1, True, 1, 1, 0, 4),
        n("scott walker recount results", 2, 2, True, 1, 1, 1, 4, 1),
        n("scott walker recount results 2018", 3, 1, False, 0, 1, 0, 5),
    )


def test_every_node_and_link_is_counted_once_whatever_the_case_or_duplicates() -> None:
    nodes = (
        Node("A b", 0, ((1, "a b c"), (2, "A  B C"), (3, "a b d"))),
        Node("a b c", 1, ((1, "a b"),), "a b"),  # links back to the root
    )
    got = {x.node: x for x in network_structure("a b", nodes)}
    assert set(got) == {"a b", "a b c", "a b d"}
    assert got["a b"].k_out == 2 and got["a b"].k_in == 1 and got["a b"].depth == 0
    assert got["a b c"].k_in == 1 and got["a b c"].rank == 1 and not got["a b c"].merge_point
    assert got["a b"].n_suggestions == 2


def test_a_root_without_events_is_still_a_node() -> None:
    assert network_structure("a b", ()) == (n("a b", 0, 0, False, 0, 0, 0, 2),)


def test_query_words_splits_on_whitespace() -> None:
    assert query_words("beto o'rourke  2018") == 3
    assert query_words("") == 0


def test_placed_sources_has_the_cells_of_suggestion_sets() -> None:
    """The same first-occurrence rule as churn's sets, so the length beside a churn cell is
    that of the queries that filled it."""
    for nodes in (CRAWL, trim_crawl(ROOT, CRAWL)):
        placed = placed_sources(nodes)
        assert {cell: frozenset(s) for cell, s in placed.items()} == suggestion_sets(nodes)
    assert placed_sources(CRAWL)[(2, 0)] == {"scott walker wife": "scott walker"}
    # "scott walker recount" is placed by the root at (3, 0), not by "wife" at (2, 1).
    assert "scott walker recount" not in placed_sources(CRAWL).get((2, 1), {})


def test_churn_query_words_averages_the_sources_of_both_crawls() -> None:
    before = (Node("a b", 0, ((1, "a b c"),)), Node("a b c", 1, ((1, "a b c d"),), "a b"))
    after = (Node("a b", 0, ((1, "a b e"),)), Node("a b e", 1, ((1, "a b e f"), (2, "a b e g")), "a b"))
    assert churn_query_words(before, after) == {(1, 0): 2.0, (1, 1): 3.0, (2, 1): 3.0}


@pytest.mark.parametrize(
    ("x", "y"),
    [
        ([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5]),
        ([0, 0, 1, 1, 2, 2, 3, 3], [5, 3, 3, 1, 1, 1, 0, 2]),  # ties on both sides
        ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]),
    ],
)
def test_spearman_p_is_scipys(x: list[int], y: list[int]) -> None:
    rho, p = stats.spearmanr(x, y)
    assert spearman_p(float(rho), len(x)) == pytest.approx(float(p), rel=1e-9)


def test_spearman_p_edges() -> None:
    assert math.isnan(spearman_p(0.5, 2))
    assert math.isnan(spearman_p(math.nan, 100))
    assert spearman_p(1.0, 10) == 0.0 and spearman_p(-1.0, 10) == 0.0
    assert spearman_p(0.0, 50) == pytest.approx(1.0)
