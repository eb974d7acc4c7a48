"""RAI's comparisons across engines (§4.4 degree correlation) and lengths (§4.3 survival by
query length) through `report autocomplete --section compare`, equal to the pure functions on
the posted crawls."""

from __future__ import annotations

import asyncio
from collections import defaultdict

import orjson
import pytest
from typer.testing import CliRunner

from analytics.stats.autocomplete import Node, network_texts, words
from analytics.stats.autocomplete_compare import degree_correlation, degrees, survival_by_length
from analytics.stats.autocomplete_network import association_edges
from auditstream.cli import app
from collectors.simulate.autocomplete_traffic import AutocompleteSimulation, CrawlConfig
from collectors.simulate.poster import post_batches
from tests.helpers import Service, wait_for

pytestmark = pytest.mark.integration
STUDY, ROUNDS, ROOTS = "ac-cmp", 3, ("jeb bush", "ted cruz", "marco rubio")


def test_compare_section_equals_the_pure_functions(service: Service) -> None:
    crawls: dict[str, dict[tuple[str, int], list[Node]]] = defaultdict(lambda: defaultdict(list))
    for engine, seed in (("google", 3), ("bing", 5)):
        sim = AutocompleteSimulation(CrawlConfig(roots=ROOTS, engine=engine, seed=seed, study=STUDY))
        for r in range(ROUNDS):
            events = list(sim.crawl_round(r))
            for e in events:
                if e["type"] == "autocomplete_node":
                    pairs = tuple((s["rank"], s["text"]) for s in e["suggestions"])
                    crawls[engine][e["root"], r].append(Node(e["query"], e["depth"], pairs, e["parent"]))
            stats = asyncio.run(post_batches(service.url, service.api_key, [events], concurrency=1))
            assert stats.accepted == len(events)
    wait_for(
        lambda: (
            service.scalar(f"SELECT count() FROM autocomplete_crawls WHERE startsWith(crawl_id, '{STUDY}')")
            == 2 * ROUNDS * len(ROOTS)
        ),
        120,
        "every crawl analysed",
    )
    args = ["report", "autocomplete", "--study", STUDY, "--section", "compare", "--format", "json"]
    result = CliRunner().invoke(app, [*args, "--url", service.url, "--api-key", service.api_key])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout)

    links = {
        engine: list(association_edges([(root, nodes) for (root, _), nodes in mine.items()]))
        for engine, mine in crawls.items()
    }
    got = {(r["engine_a"], r["engine_b"], r["degree"], r["over"]): r for r in doc["degree_correlation"]}
    assert len(got) == 4
    for degree in ("in", "out"):
        for over in ("all", "both"):
            want = degree_correlation(degrees(links["bing"], degree), degrees(links["google"], degree), over)
            row = got["bing", "google", degree, over]
            assert row["ngrams"] == want.n > 0
            assert row["rho"] == pytest.approx(want.rho, abs=1e-9)
            assert row["p"] == pytest.approx(want.p, rel=1e-6)

    tests = {r["engine"]: r for r in doc["survival_length"]}
    for engine, mine in crawls.items():
        seen: dict[tuple[str, str], set[int]] = defaultdict(set)
        for (root, r), nodes in mine.items():
            for text in network_texts(nodes):
                seen[root, text].add(r)  # one round a crawl; rounds may share a UTC day
        assert tests[engine]["test"] == "kruskal_wallis"
        assert tests[engine]["suggestions"] == len(seen)
        lengths = {len(words(text)) for _, text in seen}
        assert tests[engine]["groups"] == len({min(n, 6) for n in lengths})
    by_length = [r for r in doc["survival_by_length"] if r["engine"] == "google"]
    assert sum(r["suggestions"] for r in by_length) == tests["google"]["suggestions"]
    days = [(r["words"], 1) for r in by_length for _ in range(r["suggestions"])]
    assert survival_by_length(days).groups == tests["google"]["groups"]
