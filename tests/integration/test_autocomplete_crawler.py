"""The real crawler, against the fake suggestion server, into the running pipeline: two crawls
of a changing graph come out of ClickHouse as the pure functions compute them from raw."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from analytics.stats.autocomplete import Node, churn, network_texts, nmi, suggestion_sets, word_distribution
from auditstream.cli import app
from tests.fakes.suggest_server import FakeSuggestServer
from tests.helpers import Service, wait_for

pytestmark = pytest.mark.integration
runner = CliRunner()
BEFORE = {
    "alpha": ["alpha beta", "alpha gamma", "alpha"],
    "alpha beta": ["alpha beta delta", "alpha gamma"],
    "alpha gamma": ["alpha gamma epsilon"],
}
AFTER = {
    "alpha": ["alpha gamma", "alpha omega", "alpha"],
    "alpha gamma": ["alpha gamma epsilon", "alpha gamma zeta"],
    "alpha omega": ["alpha omega beta"],
}


def crawl(
    tmp_path: Path, server: FakeSuggestServer, service: Service, crawl_id: str, study: str = "acreal"
) -> None:
    roots = tmp_path / "roots.txt"
    roots.write_text("alpha\n")
    args = ["crawl", "autocomplete", "--roots", str(roots), "--engine", "google"]
    args += ["--endpoint", f"google={server.base_url}", "--max-depth", "2", "--crawl-id", crawl_id]
    args += ["--state-dir", str(tmp_path / "state"), "--archive-dir", str(tmp_path / "archive")]
    args += [
        "--no-progress",
        "--rate",
        "20",
        "--url",
        service.url,
        "--api-key",
        service.api_key,
        "--study",
        study,
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output


def nodes_from_raw(service: Service, crawl_id: str) -> list[Node]:
    rows = service.sql(
        "SELECT query, parent, depth, arrayMap(s -> s.1, suggestions) AS ranks, "
        f"arrayMap(s -> s.2, suggestions) AS texts FROM autocomplete_nodes WHERE crawl_id = '{crawl_id}'"
    )
    return [
        Node(r["query"], r["depth"], tuple(zip(r["ranks"], r["texts"], strict=True)), r["parent"])
        for r in rows
    ]


def test_crawler_to_clickhouse(tmp_path: Path, service: Service) -> None:
    with FakeSuggestServer(BEFORE) as server:
        crawl(tmp_path, server, service, "acreal-1")
        server.set_graph(AFTER)
        crawl(tmp_path, server, service, "acreal-2")
        crawl(tmp_path, server, service, "otherstudy-1", study="otherstudy")  # the same root, another study

    def analysed() -> list[dict[str, Any]]:
        rows = service.sql(
            "SELECT crawl_id, nmi, n_nodes FROM autocomplete_crawls WHERE root = 'alpha' "
            "AND startsWith(crawl_id, 'acreal-') ORDER BY completed_at"
        )
        return rows if len(rows) == 2 else []

    first, second = wait_for(analysed, 60, "both crawls analysed")
    before, after = nodes_from_raw(service, "acreal-1"), nodes_from_raw(service, "acreal-2")
    assert sorted(n.query for n in before) == [
        "alpha",
        "alpha beta",
        "alpha beta delta",
        "alpha gamma",
        "alpha gamma epsilon",
    ]
    assert first["nmi"] is None and first["n_nodes"] == len(before)
    want = nmi(
        word_distribution(network_texts(before), "alpha"), word_distribution(network_texts(after), "alpha")
    )
    assert second["nmi"] == pytest.approx(want, abs=1e-12) and 0 < want < 1

    stored = {
        (r["rank"], r["depth"]): r["churn"]
        for r in service.sql("SELECT rank, depth, churn FROM autocomplete_churn WHERE crawl_id = 'acreal-2'")
    }
    assert stored == pytest.approx(churn(suggestion_sets(before), suggestion_sets(after)), abs=1e-12)

    report = runner.invoke(
        app,
        [
            "report",
            "autocomplete",
            "--study",
            "acreal-",
            "--format",
            "json",
            "--url",
            service.url,
            "--api-key",
            service.api_key,
        ],
    )
    assert report.exit_code == 0, report.output
    doc = orjson.loads(report.stdout)
    assert {(c["rank"], c["depth"]) for c in doc["churn"]} == set(stored)
    assert [r["crawl_id"] for r in doc["nmi"]] == ["acreal-2"] and doc["nmi"][0]["shock"] in (0, False)
    assert sum(s["suggestions"] for s in doc["survival"]) == len(network_texts(before) | network_texts(after))

    # Another study's crawl of the same root is its study's first: nothing to compare with.
    other = wait_for(
        lambda: service.sql(
            "SELECT study_id, previous_crawl_id, nmi FROM autocomplete_crawls WHERE crawl_id = 'otherstudy-1'"
        ),
        60,
        "the other study's crawl analysed",
    )
    assert other == [{"study_id": "otherstudy", "previous_crawl_id": "", "nmi": None}]
