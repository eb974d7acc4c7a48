"""Autocomplete analytics end to end: the stored churn, nmi, associations and shocks equal a
recomputation from the events as they were posted, with the pure functions."""

from __future__ import annotations

import asyncio
import math
from collections import defaultdict
from typing import Any

import pytest

from analytics.stats.autocomplete import Node, churn, mean_churn, network_texts, nmi, suggestion_sets
from analytics.stats.autocomplete import word_distribution as wd
from analytics.stats.autocomplete_network import association_edges, is_trimmed
from analytics.stats.autocomplete_shocks import ShockRule, detect_shocks
from collectors.simulate.autocomplete_traffic import AutocompleteSimulation, CrawlConfig
from collectors.simulate.poster import post_batches
from tests.helpers import Service, wait_for

pytestmark = pytest.mark.integration
ROUNDS, SHOCK = 8, 5
CONFIG = CrawlConfig(study="ac-e2e", shock_rounds=frozenset({SHOCK}), seed=4)


@pytest.fixture(scope="module")
def crawled(service: Service) -> dict[tuple[str, int], list[Node]]:
    """Post eight rounds in order, one at a time, as a crawler would; return the posted crawls."""
    sim = AutocompleteSimulation(CONFIG)
    crawls: dict[tuple[str, int], list[Node]] = defaultdict(list)
    total = 0
    for r in range(ROUNDS):
        events = list(sim.crawl_round(r))
        for e in events:
            if e["type"] == "autocomplete_node":
                pairs = tuple((s["rank"], s["text"]) for s in e["suggestions"])
                crawls[(e["root"], r)].append(Node(e["query"], e["depth"], pairs, e["parent"]))
        stats = asyncio.run(post_batches(service.url, service.api_key, [events], concurrency=1))
        assert stats.accepted == len(events)
        total += len(events)
    expected = ROUNDS * len(CONFIG.roots)
    wait_for(
        lambda: (
            service.scalar(f"SELECT count() FROM autocomplete_crawls WHERE crawl_id LIKE '{CONFIG.study}-%'")
            == expected
        ),
        120,
        "every completed crawl analysed",
    )
    return crawls


def crawl_id(r: int) -> str:
    return f"{CONFIG.study}-{CONFIG.engine}-r{r:04d}"


def test_nmi_and_churn_equal_a_recount_from_the_posted_events(
    service: Service, crawled: dict[tuple[str, int], list[Node]]
) -> None:
    stored = {
        (row["root"], row["crawl_id"]): row
        for row in service.sql(
            f"SELECT root, crawl_id, previous_crawl_id, nmi, n_nodes FROM autocomplete_crawls "
            f"WHERE crawl_id LIKE '{CONFIG.study}-%'"
        )
    }
    churn_rows = service.sql(
        "SELECT root, crawl_id, rank, depth, churn FROM autocomplete_churn "
        f"WHERE crawl_id LIKE '{CONFIG.study}-%'"
    )
    stored_churn: dict[tuple[str, str], dict[tuple[int, int], float]] = defaultdict(dict)
    for row in churn_rows:
        stored_churn[(row["root"], row["crawl_id"])][(row["rank"], row["depth"])] = row["churn"]

    all_churn = []
    for root in CONFIG.roots:
        first = stored[(root, crawl_id(0))]
        assert first["previous_crawl_id"] == "" and first["nmi"] is None
        for r in range(1, ROUNDS):
            prev, cur = crawled[(root, r - 1)], crawled[(root, r)]
            row = stored[(root, crawl_id(r))]
            assert row["previous_crawl_id"] == crawl_id(r - 1)
            assert row["n_nodes"] == len(cur)
            want = nmi(wd(network_texts(prev), root), wd(network_texts(cur), root))
            assert row["nmi"] == pytest.approx(want, abs=1e-12)
            want_churn = churn(suggestion_sets(prev), suggestion_sets(cur))
            assert stored_churn[(root, crawl_id(r))] == pytest.approx(want_churn, abs=1e-12)
            all_churn.append(want_churn)
        assert stored[(root, crawl_id(SHOCK))]["nmi"] < 0.05  # fresh vocabulary everywhere

    # The rank x depth table is the paper's average over roots and crawl pairs.
    by_cell = {
        (row["rank"], row["depth"]): row["mean_churn"]
        for row in service.sql(
            "SELECT rank, depth, avg(churn) AS mean_churn FROM autocomplete_churn "
            f"WHERE crawl_id LIKE '{CONFIG.study}-%' GROUP BY rank, depth"
        )
    }
    assert by_cell == pytest.approx(mean_churn(all_churn), abs=1e-12)


def test_edges_associations_and_survival(
    service: Service, crawled: dict[tuple[str, int], list[Node]]
) -> None:
    root = CONFIG.roots[0]
    edges = service.sql(
        "SELECT crawl_id, source, target, rank, depth, trimmed FROM autocomplete_edges "
        f"WHERE root = '{root}' AND crawl_id LIKE '{CONFIG.study}-%'"
    )
    posted = sum(len(n.suggestions) for r in range(ROUNDS) for n in crawled[(root, r)])
    assert len(edges) == posted  # every edge, including those to nodes seen before
    assert all(e["trimmed"] == is_trimmed(root, e["target"]) for e in edges)

    weights = {
        (row["source_reduced"], row["target_reduced"]): row["weight"]
        for row in service.sql(
            "SELECT source_reduced, target_reduced, weight FROM autocomplete_associations "
            f"WHERE root = '{root}' AND study_id = '{CONFIG.study}'"
        )
    }
    assert weights == dict(association_edges([(root, crawled[(root, r)]) for r in range(ROUNDS)]))

    survival = service.sql(
        "SELECT suggestion, days FROM autocomplete_survival "
        f"WHERE root = '{root}' AND engine = 'google' AND study_id = '{CONFIG.study}'"
    )
    texts = set().union(*(network_texts(crawled[(root, r)]) for r in range(ROUNDS)))
    assert {s["suggestion"] for s in survival} == texts
    assert all(s["days"] >= 1 for s in survival)


def test_the_planted_shock_raises_exactly_one_alert(
    service: Service, crawled: dict[tuple[str, int], list[Node]]
) -> None:
    history = {
        crawl_id(r): {
            root: nmi(
                wd(network_texts(crawled[(root, r - 1)]), root), wd(network_texts(crawled[(root, r)]), root)
            )
            for root in CONFIG.roots
        }
        for r in range(1, ROUNDS)
    }
    offline = detect_shocks(history, ShockRule())
    assert [s.round_id for s in offline] == [crawl_id(SHOCK)]

    def alerts() -> list[dict[str, Any]]:
        return service.sql(
            "SELECT subject, summary, details FROM alerts WHERE kind = 'autocomplete_shock' "
            f"AND subject LIKE 'google/{CONFIG.study}-%'"
        )

    found = wait_for(alerts, 90, "the shock alert")
    assert [a["subject"] for a in found] == [f"google/{crawl_id(SHOCK)}"]
    assert all(root in found[0]["details"] for root in CONFIG.roots)
    assert not math.isnan(history[crawl_id(SHOCK)][CONFIG.roots[0]])
