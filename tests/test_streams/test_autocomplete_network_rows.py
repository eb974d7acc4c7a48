"""Rows of a completed crawl on its trimmed and its full network (trim before analysis, RAI §3)."""

from __future__ import annotations

from dataclasses import replace

from analytics.stats.autocomplete import (
    Node,
    network_texts,
    nmi,
    nmi_pooled,
    suggestion_sets,
    word_distribution,
)
from analytics.stats.autocomplete_network import association_edges, trim_crawl
from streams.recompute.autocomplete_rows import (
    NETWORKS,
    CompletedCrawl,
    association_rows,
    churn_rows,
    crawl_row,
    edge_rows,
    structure_rows,
)
from tests.test_analytics.test_stats_autocomplete_structure import CRAWL, ROOT

NOW = "2026-11-22 10:00:00.000000"


def completed(crawl_id: str, nodes: tuple[Node, ...], n_failed: int = 0) -> CompletedCrawl:
    n_edges = sum(len(x.suggestions) for x in nodes)
    return CompletedCrawl(
        "bing", ROOT, crawl_id, "2026-11-22 09:00:00.000", 2, "", len(nodes), n_edges, n_failed, nodes
    )


FIRST = completed("c1", CRAWL)
# The next crawl: the namesake is gone, the root suggests "scott walker age" instead.
SECOND = completed(
    "c2",
    (
        Node(
            "scott walker",
            0,
            (
                (1, "scott walker"),
                (2, "scott walker wife"),
                (3, "scott walker recount"),
                (4, "scott walker age"),
            ),
        ),
        *CRAWL[1:3],
        Node("scott walker age", 1, (), "scott walker"),
        *CRAWL[4:5],
        *CRAWL[6:],
    ),
)


def test_the_default_network_is_the_trimmed_one() -> None:
    assert NETWORKS[0] == "trimmed"
    trimmed = FIRST.trimmed()
    assert trimmed.network == "trimmed" and trimmed.nodes == trim_crawl(ROOT, CRAWL)
    assert trimmed.trimmed() is trimmed and FIRST.in_network("full") is FIRST


def test_edges_say_which_belong_to_the_trimmed_network() -> None:
    rows = {(r["source"], r["target"]): r for r in edge_rows(FIRST, NOW)}
    assert len(rows) == sum(len(x.suggestions) for x in CRAWL)
    kept = {edge for edge, r in rows.items() if r["kept"]}
    assert kept == {
        ("scott walker", "scott walker"),
        ("scott walker", "scott walker wife"),
        ("scott walker", "scott walker recount"),
        ("scott walker wife", "scott walker wife age"),
        ("scott walker wife", "scott walker recount"),
        ("scott walker recount", "scott walker recount results"),
        ("scott walker wife age", "scott walker wife age"),
        ("scott walker recount results", "scott walker recount results 2018"),
    }
    # The rule alone passes "recount scott walker", but it hangs below the emergent root.
    assert rows[("recount", "recount scott walker")]["trimmed"] == 0
    assert rows[("recount", "recount scott walker")]["kept"] == 0
    assert rows[("scott walker", "walker texas ranger")]["trimmed"] == 1


def test_crawl_rows_per_network_with_the_networks_own_size_and_nmi() -> None:
    full = crawl_row(SECOND, FIRST, NOW)
    trimmed = crawl_row(SECOND.trimmed(), FIRST.trimmed(), NOW)
    assert (full["network"], trimmed["network"]) == ("full", "trimmed")
    assert full["n_nodes"] == trimmed["n_nodes"] == len(SECOND.nodes)  # the marker's count, both
    assert (full["net_nodes"], trimmed["net_nodes"]) == (10, 7)
    assert trimmed["net_edges"] == sum(len(x.suggestions) for x in SECOND.trimmed().nodes)
    words = lambda c: word_distribution(network_texts(c.nodes), ROOT)  # noqa: E731
    # nmi_eq3 is RAI's Equation 3 (the views' nmi); the column nmi keeps the pooled reading
    assert trimmed["nmi_eq3"] == nmi(words(FIRST.trimmed()), words(SECOND.trimmed()))
    assert full["nmi_eq3"] == nmi(words(FIRST), words(SECOND))
    assert trimmed["nmi_eq3"] != full["nmi_eq3"]
    assert trimmed["nmi"] == nmi_pooled(words(FIRST.trimmed()), words(SECOND.trimmed()))
    assert full["nmi"] == nmi_pooled(words(FIRST), words(SECOND))


def test_churn_per_network_carries_the_producing_queries_length() -> None:
    rows = churn_rows(SECOND.trimmed(), FIRST.trimmed(), NOW)
    assert {r["network"] for r in rows} == {"trimmed"}
    cells = {(r["rank"], r["depth"]): r for r in rows}
    assert set(cells) == set(suggestion_sets(FIRST.trimmed().nodes)) | set(
        suggestion_sets(SECOND.trimmed().nodes)
    )
    assert cells[(4, 0)]["churn"] == 1.0  # trimmed, the namesake left no rank 4 to compare with
    assert cells[(4, 0)]["query_words"] == 2.0  # placed by the root
    assert cells[(2, 0)]["churn"] == cells[(3, 0)]["churn"] == 0.0
    # Untrimmed, "recount" (1 word) and "scott walker recount results" (4) fill (1, 2) in both crawls.
    full = {(r["rank"], r["depth"]): r for r in churn_rows(SECOND, FIRST, NOW)}
    assert full[(1, 2)]["churn"] == 0.0 and full[(1, 2)]["query_words"] == 2.5
    assert cells[(1, 2)]["query_words"] == 4.0  # trimmed, "recount" is gone


def test_associations_per_network() -> None:
    trimmed = {(r["source_reduced"], r["target_reduced"]) for r in association_rows(FIRST.trimmed(), NOW)}
    full = {(r["source_reduced"], r["target_reduced"]) for r in association_rows(FIRST, NOW)}
    assert trimmed == set(association_edges([(ROOT, CRAWL)]))
    assert full == set(association_edges([(ROOT, CRAWL)], rule="none"))
    assert {("scott walker", "texas ranger"), ("recount", "definition")} <= full - trimmed
    assert {r["network"] for r in association_rows(FIRST, NOW)} == {"full"}


def test_structure_rows_per_network_and_none_for_a_crawl_with_holes() -> None:
    full, trimmed = structure_rows(FIRST, NOW), structure_rows(FIRST.trimmed(), NOW)
    assert (len(full), len(trimmed)) == (11, 6)
    by_depth = lambda rows: [sum(r["depth"] == d for r in rows) for d in range(4)]  # noqa: E731
    assert by_depth(full) == [1, 3, 4, 3] and by_depth(trimmed) == [1, 2, 2, 1]
    root = next(r for r in trimmed if r["depth"] == 0)
    assert (root["node"], root["k_out"], root["length_changes"], root["network"]) == (
        "scott walker",
        2,
        [1, 1],
        "trimmed",
    )
    assert structure_rows(replace(FIRST, n_failed=1), NOW) == []
