"""Trim before analysis, network structure and social media, end to end: the real crawler
against the fake suggestion server, into the running pipeline, out of the views and
`report autocomplete`. A namesake ("walker texas ranger") and an emergent root ("recount")
are planted, so the trimmed and the full networks differ by a known number of nodes per
depth; the stored rows also equal a recount from the raw node events."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from scipy import stats
from typer.testing import CliRunner

from analytics.stats.autocomplete import (
    Node,
    churn,
    network_texts,
    nmi,
    platforms_mentioned,
    suggestion_sets,
    word_distribution,
)
from analytics.stats.autocomplete_network import trim_crawl
from analytics.stats.autocomplete_structure import network_structure
from auditstream.cli import app
from tests.fakes.suggest_server import FakeSuggestServer
from tests.helpers import Service, wait_for
from tests.integration.test_autocomplete_crawler import nodes_from_raw

pytestmark = pytest.mark.integration
runner = CliRunner()
ROOT = "scott walker"
STUDY = "acnet"
COMMON = {
    "scott walker wife": ["scott walker wife age", "scott walker recount"],
    "scott walker recount": ["recount", "scott walker recount results"],
    "recount": ["recount definition", "recount scott walker"],
    "scott walker recount results": ["scott walker recount results youtube"],
}
BEFORE = {
    ROOT: ["scott walker wife", "scott walker recount", "walker texas ranger", "scott walker twitter"],
    "walker texas ranger": ["walker texas ranger cast", "scott walker wife"],
    "scott walker twitter": ["scott walker twitter feed", "scott walker facebook"],
    **COMMON,
}
AFTER = {
    ROOT: ["scott walker wife", "scott walker recount", "scott walker age", "scott walker youtube"],
    **COMMON,
}
CRAWLS = (f"{STUDY}-1", f"{STUDY}-2")


def crawl(tmp: Path, server: FakeSuggestServer, service: Service, crawl_id: str) -> None:
    """`auditstream crawl autocomplete` of ROOT to depth 2, as an operator runs it."""
    roots = tmp / "roots.txt"
    roots.write_text(ROOT + "\n")
    args = ["crawl", "autocomplete", "--roots", str(roots), "--engine", "google", "--max-depth", "2"]
    args += ["--endpoint", f"google={server.base_url}", "--crawl-id", crawl_id, "--study", STUDY]
    args += ["--state-dir", str(tmp / "state"), "--archive-dir", str(tmp / "archive"), "--no-progress"]
    args += ["--rate", "20", "--url", service.url, "--api-key", service.api_key]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory, service: Service) -> dict[str, list[Node]]:
    tmp = tmp_path_factory.mktemp("acnet")
    with FakeSuggestServer(BEFORE) as server:
        crawl(tmp, server, service, CRAWLS[0])
        server.set_graph(AFTER)
        crawl(tmp, server, service, CRAWLS[1])
    wait_for(
        lambda: (
            service.scalar(f"SELECT count() FROM autocomplete_crawls WHERE startsWith(crawl_id, '{STUDY}-')")
            == 2
        ),
        60,
        "both crawls analysed",
    )
    return {c: nodes_from_raw(service, c) for c in CRAWLS}


def report(service: Service, *args: str) -> dict[str, list[dict[str, Any]]]:
    common = ["--study", f"{STUDY}-", "--format", "json", "--url", service.url, "--api-key", service.api_key]
    result = runner.invoke(app, ["report", "autocomplete", *args, *common])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def test_nodes_per_depth_before_and_after_trimming(service: Service, crawled: dict[str, list[Node]]) -> None:
    """Figure 2 by hand: full [1, 4, 6, 3] and [1, 4, 3, 3] nodes at depths 0-3 (the crawl stops
    at depth 2; depth 3 holds what depth-2 queries suggested), trimmed [1, 3, 4, 1] and [1, 4, 2, 1]."""
    doc = report(service, "--section", "structure")
    depth = doc["depth"]
    assert [r["depth"] for r in depth] == [0, 1, 2, 3]
    assert [int(r["nodes_full"]) for r in depth] == [2, 8, 9, 6]
    assert [int(r["nodes_trimmed"]) for r in depth] == [2, 7, 6, 2]
    assert [r["mean_nodes_trimmed"] for r in depth] == [1.0, 3.5, 3.0, 1.0]
    # The only trimmed merge point: root and "wife" both suggest "scott walker recount", twice.
    assert [int(r["merge_points"]) for r in depth] == [0, 2, 0, 0]
    summary = doc["summary"][0]
    assert int(summary["max_suggestions"]) == 4 and int(summary["crawls"]) == 2
    full = report(service, "--section", "summary", "--network", "full")["summary"][0]
    # Untrimmed, "wife" is a merge point too (the namesake links back to it) in the first crawl.
    assert (int(summary["merge_points"]), int(full["merge_points"])) == (2, 3)


def test_structure_rows_equal_a_recount_from_raw(service: Service, crawled: dict[str, list[Node]]) -> None:
    for network, view in (
        ("trimmed", "autocomplete_node_structure"),
        ("full", "autocomplete_node_structure_full"),
    ):
        for crawl_id, nodes in crawled.items():
            stored = service.sql(
                f"SELECT node, depth, rank, submitted, n_suggestions, k_in, k_out, words, length_changes "
                f"FROM {view} WHERE crawl_id = '{crawl_id}' ORDER BY depth, rank, node"
            )
            net = trim_crawl(ROOT, nodes) if network == "trimmed" else nodes
            want = [
                [
                    n.node,
                    n.depth,
                    n.rank,
                    int(n.submitted),
                    n.n_suggestions,
                    n.k_in,
                    n.k_out,
                    n.words,
                    list(n.length_changes),
                ]
                for n in network_structure(ROOT, net)
            ]
            assert [list(r.values()) for r in stored] == want, (network, crawl_id)


def test_every_statistic_is_on_the_trimmed_network_by_default(
    service: Service, crawled: dict[str, list[Node]]
) -> None:
    before, after = crawled[CRAWLS[0]], crawled[CRAWLS[1]]
    for suffix, net in (("", lambda n: trim_crawl(ROOT, n)), ("_full", lambda n: n)):
        row = service.sql(
            f"SELECT network, nmi FROM autocomplete_crawls{suffix} WHERE crawl_id = '{CRAWLS[1]}'"
        )[0]
        words = lambda nodes: word_distribution(network_texts(nodes), ROOT)  # noqa: E731
        assert row["nmi"] == pytest.approx(nmi(words(net(before)), words(net(after))), abs=1e-12)
        assert row["network"] == ("trimmed" if suffix == "" else "full")
        stored = {
            (r["rank"], r["depth"]): r["churn"]
            for r in service.sql(
                f"SELECT rank, depth, churn FROM autocomplete_churn{suffix} WHERE crawl_id = '{CRAWLS[1]}'"
            )
        }
        assert stored == pytest.approx(
            churn(suggestion_sets(net(before)), suggestion_sets(net(after))), abs=1e-12
        )
    survival = {
        r["suggestion"]
        for r in service.sql(
            f"SELECT suggestion FROM autocomplete_survival WHERE root = '{ROOT}' AND study_id = '{STUDY}'"
        )
    }
    assert "recount" not in survival and "walker texas ranger" not in survival
    assert survival == set().union(*(network_texts(trim_crawl(ROOT, n)) for n in crawled.values()))
    # The default report reads the same trimmed cells.
    doc = report(service, "--section", "churn")
    assert {(c["rank"], c["depth"]) for c in doc["churn"]} == set(stored_trimmed_cells(service))


def stored_trimmed_cells(service: Service) -> set[tuple[int, int]]:
    rows = service.sql(f"SELECT rank, depth FROM autocomplete_churn WHERE startsWith(crawl_id, '{STUDY}-')")
    return {(r["rank"], r["depth"]) for r in rows}


def test_social_media_per_engine_and_root_as_a_share_of_suggestions(
    service: Service, crawled: dict[str, list[Node]]
) -> None:
    """By hand, trimmed: 8 + 7 suggestions, of which 4 + 2 name a platform (twitter 2, facebook
    1, youtube 3); untrimmed 13 + 10 suggestions with the same 6."""
    social = {r["platform"]: r for r in report(service, "--section", "social")["social"]}
    assert {p: int(r["mentions"]) for p, r in social.items()} == {
        "any": 6,
        "twitter": 2,
        "facebook": 1,
        "youtube": 3,
    }
    assert int(social["any"]["suggestions"]) == 15 and social["any"]["share"] == pytest.approx(0.4)
    assert (int(social["youtube"]["roots"]), int(social["youtube"]["of_roots"])) == (1, 1)
    full = {r["platform"]: r for r in report(service, "--section", "social", "--network", "full")["social"]}
    assert int(full["any"]["suggestions"]) == 23 and full["any"]["share"] == pytest.approx(6 / 23)
    roots = report(service, "--section", "social_roots")["social_roots"]
    assert {(r["root"], r["platform"]): int(r["mentions"]) for r in roots}[(ROOT, "any")] == 6
    # The analyst views agree, and with a recount from raw.
    share = service.sql(
        "SELECT suggestions, social, share FROM autocomplete_social_share "
        f"WHERE root = '{ROOT}' AND study_id = '{STUDY}'"
    )
    assert share == [{"suggestions": 15, "social": 6, "share": 0.4}]
    mentions = Counter[str]()
    for nodes in crawled.values():
        for text in network_texts(trim_crawl(ROOT, nodes)):
            mentions.update(platforms_mentioned(text))
    views = service.sql(
        "SELECT platform, mentions FROM autocomplete_social_mentions "
        f"WHERE root = '{ROOT}' AND study_id = '{STUDY}'"
    )
    assert {r["platform"]: r["mentions"] for r in views} == dict(mentions)


def test_correlations_equal_scipys_on_the_raw_networks(
    service: Service, crawled: dict[str, list[Node]]
) -> None:
    doc = report(service, "--section", "correlations")
    got = {(r["x"], r["y"]): r for r in doc["correlations"] if r["at_depth"] is None}
    nodes = [n for c in CRAWLS for n in network_structure(ROOT, trim_crawl(ROOT, crawled[c]))]
    submitted = [n for n in nodes if n.submitted]
    for (x, y), pairs in {
        ("depth", "k_out"): [(n.depth, n.k_out) for n in submitted],
        ("words", "depth"): [(n.words, n.depth) for n in nodes],
        ("words", "k_out"): [(n.words, n.k_out) for n in submitted],
    }.items():
        want = stats.spearmanr([a for a, _ in pairs], [b for _, b in pairs])
        assert got[(x, y)]["n"] == len(pairs)
        assert got[(x, y)]["rho"] == pytest.approx(want.statistic, abs=1e-9)
        assert got[(x, y)]["p"] == pytest.approx(want.pvalue, rel=1e-6)
    assert not any(math.isnan(r["rho"]) for r in got.values() if r["rho"] is not None)
