from __future__ import annotations

from analytics.stats.autocomplete import Node
from streams.recompute.autocomplete_rows import (
    CompletedCrawl,
    association_rows,
    churn_rows,
    crawl_row,
    edge_rows,
)

NOW = "2026-11-22 10:00:00.000000"


def crawl(crawl_id: str, nodes: tuple[Node, ...]) -> CompletedCrawl:
    return CompletedCrawl(
        "google", "asa hutchinson", crawl_id, "2026-11-22 09:00:00.000", 1, "", len(nodes), 0, 0, nodes
    )


FIRST = crawl(
    "c1",
    (
        Node("asa hutchinson", 0, ((1, "asa hutchinson"), (2, "asa hutchinson biography"), (3, "arkansas"))),
        Node("asa hutchinson biography", 1, ((1, "asa hutchinson biography youtube"),), "asa hutchinson"),
    ),
)
SECOND = crawl(
    "c2",
    (Node("asa hutchinson", 0, ((1, "asa hutchinson"), (2, "asa hutchinson age"), (3, "arkansas"))),),
)


def test_edge_rows_flag_self_loops_trimming_and_platforms() -> None:
    rows = edge_rows(FIRST, NOW)
    assert [(r["source"], r["rank"], r["depth"]) for r in rows] == [
        ("asa hutchinson", 1, 0),
        ("asa hutchinson", 2, 0),
        ("asa hutchinson", 3, 0),
        ("asa hutchinson biography", 1, 1),
    ]
    assert [r["self_loop"] for r in rows] == [1, 0, 0, 0]
    assert [r["trimmed"] for r in rows] == [0, 0, 1, 0]  # "arkansas" lacks the root's words
    assert rows[3]["platforms"] == ["youtube"]
    assert {r["trimming_rule"] for r in [crawl_row(FIRST, None, NOW)]} == {"first_last_word"}


def test_first_crawl_has_no_nmi_and_no_churn() -> None:
    assert crawl_row(FIRST, None, NOW)["nmi"] is None
    assert churn_rows(FIRST, None, NOW) == []


def test_second_crawl_against_the_first() -> None:
    row = crawl_row(SECOND, FIRST, NOW)
    assert row["previous_crawl_id"] == "c1"
    # Words without the root's: first {biography: 2, arkansas: 1, youtube: 1}, second
    # {age: 1, arkansas: 1}; only "arkansas" is shared, so nmi is strictly between 0 and 1.
    assert 0 < row["nmi"] < 1
    cells = {(r["rank"], r["depth"]): r["churn"] for r in churn_rows(SECOND, FIRST, NOW)}
    assert cells[(3, 0)] == 0.0  # "arkansas" stayed at rank 3
    assert cells[(2, 0)] == 1.0  # biography -> age
    assert cells[(1, 1)] == 1.0  # depth 1 only in the first crawl


def test_association_rows_name_edges_by_added_words() -> None:
    pairs = {(r["source_reduced"], r["target_reduced"]) for r in association_rows(FIRST, NOW)}
    assert ("asa hutchinson", "biography") in pairs
    assert ("biography", "youtube") in pairs
    assert all(r["edges"] == 1 for r in association_rows(FIRST, NOW))
    assert association_rows(SECOND, NOW)[0]["crawl_id"] == "c2"


def test_a_crawl_with_failed_nodes_gets_no_nmi_and_no_churn() -> None:
    """A blocked branch is a hole, not a changed network (else a blocking episode looks like a shock)."""
    from dataclasses import replace

    holed = replace(SECOND, n_failed=1)
    assert crawl_row(holed, FIRST, NOW)["nmi"] is None
    assert churn_rows(holed, FIRST, NOW) == []
    assert crawl_row(SECOND, FIRST, NOW)["nmi"] is not None
