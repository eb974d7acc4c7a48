"""The autocomplete views of migration 0022 on a fresh chDB, against hand-computed tables and a
recount with scipy: the trimmed network by default, `_full` twins, structure and social media.

The rows are what the worker writes for the crawls (streams.recompute.autocomplete_rows);
the views' own SQL (joins, windows, mid-ranks) is what is checked. chDB runs in a
subprocess (one session per process), as in tests/test_deploy/test_grafana.py.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import subprocess
import sys
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest
from scipy import stats

from analytics.reports.autocomplete import AutocompleteQuery
from analytics.stats.autocomplete import Node
from streams.recompute.autocomplete_rows import (
    NETWORKS,
    CompletedCrawl,
    association_rows,
    churn_rows,
    crawl_row,
    edge_rows,
    structure_rows,
)
from tests.test_streams.test_autocomplete_network_rows import FIRST, SECOND

ROOT = Path(__file__).resolve().parents[2]
NOW = "2026-11-22 10:00:00.000000"


def simulated() -> list[CompletedCrawl]:
    """Three seeded google crawls of three roots with varying fan-out, merges, longer and
    shorter suggestions and a social platform now and then, for the correlations."""
    words = ("wife", "age", "news", "twitter", "poll", "youtube", "bio", "net worth")
    crawls = []
    for r in range(3):
        for root in ("asa hutchinson", "jeb bush", "ted cruz"):
            rng = random.Random(f"{root}|{r}")
            nodes, seen, queue = [], {root}, [(root, None, 0)]
            while queue:
                query, parent, depth = queue.pop(0)
                pool = [f"{query} {w}" for w in words if w not in query] + sorted(seen - {query})[:3]
                pool += [" ".join(root.split()[:1] + query.split()[2:])] if depth else []  # shorter
                picked = rng.sample(pool, rng.randint(0, min(6, len(pool))))
                nodes.append(Node(query, depth, tuple(enumerate(picked, start=1)), parent))
                for text in picked:
                    if text not in seen and depth < 2:
                        seen.add(text)
                        queue.append((text, query, depth + 1))
            crawl_id = f"sim-r{r}"
            crawls.append(
                CompletedCrawl(
                    "google",
                    root,
                    crawl_id,
                    f"2026-11-2{r} 09:00:00.000",
                    2,
                    "",
                    len(nodes),
                    0,
                    0,
                    tuple(nodes),
                )
            )
    return crawls


SIMULATED = simulated()
BING = [FIRST, SECOND]
# Two studies of the same root on one engine: "audit-a" crawls it once, "audit-b" twice, on
# the first crawl's day and a day later.
STUDIES = [
    dataclasses.replace(FIRST, engine="ddg", crawl_id="a1", study_id="audit-a"),
    dataclasses.replace(FIRST, engine="ddg", crawl_id="b1", study_id="audit-b"),
    dataclasses.replace(
        SECOND, engine="ddg", crawl_id="b2", study_id="audit-b", completed_at="2026-11-23 09:00:00.000"
    ),
]


def all_rows() -> dict[str, list[dict[str, Any]]]:
    tables: dict[str, list[dict[str, Any]]] = {
        k: [] for k in ("edges", "churn", "structure", "crawls", "associations")
    }
    by_root: dict[tuple[str, str, str], list[CompletedCrawl]] = {}
    for crawl in BING + SIMULATED + STUDIES:
        by_root.setdefault((crawl.engine, crawl.study_id, crawl.root), []).append(crawl)
    for crawls in by_root.values():
        previous = None
        for crawl in crawls:
            tables["edges"] += edge_rows(crawl, NOW)
            for network in NETWORKS:
                this, before = crawl.in_network(network), previous.in_network(network) if previous else None
                tables["churn"] += churn_rows(this, before, NOW)
                tables["structure"] += structure_rows(this, NOW)
                tables["associations"] += association_rows(this, NOW)
                tables["crawls"] += [crawl_row(this, before, NOW)]
            previous = crawl
    return tables


ROWS = all_rows()


@cache
def run(queries: tuple[tuple[str, str], ...]) -> dict[str, list[dict[str, Any]]]:
    setup = [
        f"INSERT INTO agg_autocomplete_{table} FORMAT JSONEachRow\n"
        + "\n".join(orjson.dumps(r).decode() for r in rows)
        for table, rows in ROWS.items()
    ]
    result = subprocess.run(
        [sys.executable, "-m", "tests.test_deploy.chdb_queries"],
        input=json.dumps({"queries": dict(queries), "setup": setup}),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = {}
    for key, doc in json.loads(result.stdout).items():
        if key.startswith("__"):
            continue
        assert doc["error"] is None, f"{key}: {doc['error']}"
        out[key] = [dict(zip(doc["columns"], row, strict=True)) for row in doc["rows"]]
    return out


def q(**queries: str) -> dict[str, list[dict[str, Any]]]:
    return run(tuple(sorted(queries.items())))


BING_Q = AutocompleteQuery(engine="bing")
BING_FULL = AutocompleteQuery(engine="bing", network="full")


def test_default_views_hold_the_trimmed_network_and_the_twins_the_full_one() -> None:
    got = q(
        crawls="SELECT crawl_id, network, net_nodes FROM autocomplete_crawls "
        "WHERE engine = 'bing' ORDER BY crawl_id",
        crawls_full="SELECT crawl_id, network, net_nodes FROM autocomplete_crawls_full "
        "WHERE engine = 'bing' ORDER BY crawl_id",
        churn="SELECT DISTINCT network FROM autocomplete_churn",
        churn_full="SELECT DISTINCT network FROM autocomplete_churn_full",
        survival="SELECT suggestion FROM autocomplete_survival WHERE engine = 'bing' ORDER BY suggestion",
        survival_full="SELECT count() AS n FROM autocomplete_survival_full WHERE engine = 'bing'",
    )
    assert [(r["crawl_id"], r["network"], int(r["net_nodes"])) for r in got["crawls"]] == [
        ("c1", "trimmed", 6),
        ("c2", "trimmed", 7),
    ]
    assert [r["network"] for r in got["crawls_full"]] == ["full", "full"]
    assert got["churn"] == [{"network": "trimmed"}] and got["churn_full"] == [{"network": "full"}]
    # Trimmed, "recount", the namesake and everything below them never survive.
    assert not {"recount", "walker texas ranger", "recount definition"} & {
        r["suggestion"] for r in got["survival"]
    }
    assert int(got["survival_full"][0]["n"]) == len(
        {r["target"] for r in ROWS["edges"] if r["engine"] == "bing"}
    )


def test_nodes_per_depth_before_and_after_trimming_by_hand() -> None:
    """Figure 2 on the two bing crawls: full [1, 3, 4, 3] and [1, 3, 3, 3] nodes at depths 0-3,
    trimmed [1, 2, 2, 1] and [1, 3, 2, 1]."""
    rows = q(depth=BING_Q.depth_sql())["depth"]
    assert [int(r["depth"]) for r in rows] == [0, 1, 2, 3]
    assert [int(r["nodes_full"]) for r in rows] == [2, 6, 7, 6]
    assert [int(r["nodes_trimmed"]) for r in rows] == [2, 5, 4, 2]
    assert [float(r["mean_nodes_trimmed"]) for r in rows] == [1.0, 2.5, 2.0, 1.0]
    assert {int(r["crawls"]) for r in rows} == {2}
    # Trimmed merge points: "scott walker recount" at depth 1, in both crawls.
    assert [int(r["merge_points"]) for r in rows] == [0, 2, 0, 0]


def test_degree_distribution_and_summary_by_hand() -> None:
    got = q(
        degrees=BING_Q.structure_sql()["degrees"],
        summary=BING_Q.structure_sql()["summary"],
        summary_full=BING_FULL.structure_sql()["summary"],
    )
    k_out = {int(r["k"]): r for r in got["degrees"] if r["degree"] == "k_out"}
    # Submitted trimmed queries: c1 k_out 2, 2, 1, 0, 1; c2 3, 2, 1, 0, 0, 1.
    assert {k: int(r["nodes"]) for k, r in k_out.items()} == {0: 3, 1: 4, 2: 3, 3: 1}
    assert float(k_out[2]["mean_probability"]) == pytest.approx((2 / 5 + 1 / 6) / 2)
    assert float(k_out[2]["share"]) == pytest.approx(3 / 11)
    summary, full = got["summary"][0], got["summary_full"][0]
    assert int(summary["max_suggestions"]) == int(full["max_suggestions"]) == 4  # c2's root
    assert int(summary["merge_points"]) == 2 and int(full["merge_points"]) == 3
    assert int(summary["crawls"]) == 2 and int(summary["nodes"]) == 13


def test_query_lengths_by_hand() -> None:
    rows = q(lengths=BING_Q.structure_sql()["lengths"])["lengths"]
    change = {int(r["value"]): int(r["n"]) for r in rows if r["measure"] == "change"}
    words = {int(r["value"]): int(r["n"]) for r in rows if r["measure"] == "words"}
    want_change: Counter[int] = Counter()
    want_words: Counter[int] = Counter()
    for r in ROWS["structure"]:
        if r["engine"] == "bing" and r["network"] == "trimmed":
            want_change.update(r["length_changes"])
            want_words[r["words"]] += 1
    assert change == dict(want_change) and words == dict(want_words)
    assert change == {0: 2, 1: 11}  # "wife" -> "recount" twice; every other link adds a word


def recount_correlations(network: str) -> dict[tuple[str, str, str, int | None], tuple[float, int]]:
    """Spearman's rho with scipy, from the rows, grouped as the view groups them."""
    pairs: dict[tuple[str, str, str, int | None], list[tuple[float, float]]] = {}
    nodes = [r for r in ROWS["structure"] if r["network"] == network]
    for r in nodes:
        key = (r["engine"], "depth", "k_out", None)
        if r["submitted"]:
            pairs.setdefault(key, []).append((r["depth"], r["k_out"]))
            pairs.setdefault((r["engine"], "words", "k_out", None), []).append((r["words"], r["k_out"]))
        pairs.setdefault((r["engine"], "words", "depth", None), []).append((r["words"], r["depth"]))
    merges: Counter[tuple[str, str, str, int]] = Counter()
    for r in nodes:
        merges[(r["engine"], r["root"], r["crawl_id"], r["depth"])] += r["k_in"] > 1
    for (engine, _, _, depth), count in merges.items():
        pairs.setdefault((engine, "depth", "merge_points", None), []).append((depth, count))
    for r in (r for r in ROWS["churn"] if r["network"] == network):
        e, c = r["engine"], r["churn"]
        pairs.setdefault((e, "churn", "depth", None), []).append((c, r["depth"]))
        pairs.setdefault((e, "churn", "rank", None), []).append((c, r["rank"]))
        pairs.setdefault((e, "churn", "query_words", None), []).append((c, r["query_words"]))
        pairs.setdefault((e, "churn", "rank", r["depth"]), []).append((c, r["rank"]))
    out = {}
    for key, xy in pairs.items():
        rho = stats.spearmanr([a for a, _ in xy], [b for _, b in xy]).statistic if len(xy) > 1 else math.nan
        out[key] = (float(rho), len(xy))
    return out


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
@pytest.mark.parametrize("network", ["trimmed", "full"])
def test_correlations_equal_scipys_spearman(network: str) -> None:
    rows = q(c=AutocompleteQuery(network=network).structure_sql()["correlations"])["c"]  # type: ignore[arg-type]
    got = {
        (r["engine"], r["x"], r["y"], None if r["at_depth"] is None else int(r["at_depth"])): (
            r["rho"],
            int(r["n"]),
        )
        for r in rows
    }
    want = recount_correlations(network)
    assert set(got) == set(want)
    for key, (rho, n) in want.items():
        assert int(got[key][1]) == n, key
        value = got[key][0]
        if math.isnan(rho):
            assert value is None or math.isnan(float(value)), key
        else:
            assert float(value) == pytest.approx(rho, abs=1e-9), key
    assert sum(1 for (e, x, *_) in want if e == "google" and x == "churn") > 4  # the churn rows took part


def test_social_mentions_and_share_by_hand() -> None:
    """The only platform in the bing crawls is none; the simulated google suggestions name some."""
    got = q(
        social=AutocompleteQuery(engine="google").social_sql(),
        share="SELECT root, suggestions, social, share FROM autocomplete_social_share "
        "WHERE engine = 'google'",
        mentions="SELECT root, platform, mentions, share FROM autocomplete_social_mentions "
        "WHERE engine = 'google'",
    )
    edges = [r for r in ROWS["edges"] if r["engine"] == "google" and r["kept"]]
    suggestions = {(r["root"], r["crawl_id"], r["target"]) for r in edges}
    social = {(r["root"], r["crawl_id"], r["target"]) for r in edges if r["platforms"]}
    by_platform = {row["platform"]: row for row in got["social"]}
    assert int(by_platform["any"]["mentions"]) == len(social) > 0
    assert int(by_platform["any"]["suggestions"]) == len(suggestions)
    assert float(by_platform["any"]["share"]) == pytest.approx(len(social) / len(suggestions))
    for platform, row in by_platform.items():
        if platform != "any":
            named = {(r["root"], r["crawl_id"], r["target"]) for r in edges if platform in r["platforms"]}
            assert int(row["mentions"]) == len(named)
            assert int(row["roots"]) == len({root for root, _, _ in named})
    for row in got["share"]:
        mine = {s for s in suggestions if s[0] == row["root"]}
        assert int(row["suggestions"]) == len(mine)
        assert int(row["social"]) == len({s for s in social if s[0] == row["root"]})
    assert sum(int(r["mentions"]) for r in got["mentions"]) == sum(
        int(row["mentions"]) for p, row in by_platform.items() if p != "any"
    )


def test_pooled_views_keep_two_studies_of_one_root_apart() -> None:
    """Survival, associations and social share of one root audited by two studies: one row set
    per study, each equal to a recount of that study's rows alone."""
    got = q(
        survival="SELECT study_id, suggestion, days FROM autocomplete_survival WHERE engine = 'ddg'",
        survival_full="SELECT study_id, suggestion, days FROM autocomplete_survival_full "
        "WHERE engine = 'ddg'",
        assoc="SELECT study_id, source_reduced, target_reduced, weight, crawls "
        "FROM autocomplete_associations WHERE engine = 'ddg'",
        share="SELECT study_id, suggestions, social FROM autocomplete_social_share WHERE engine = 'ddg'",
    )
    study_of = {c.crawl_id: c.study_id for c in STUDIES}
    edges = [r for r in ROWS["edges"] if r["engine"] == "ddg"]

    def days(kept_only: bool) -> dict[tuple[str, str], int]:
        seen: dict[tuple[str, str], set[str]] = {}
        for r in edges:
            if r["kept"] or not kept_only:
                seen.setdefault((study_of[r["crawl_id"]], r["target"]), set()).add(r["completed_at"][:10])
        return {key: len(dates) for key, dates in seen.items()}

    for view, kept_only in (("survival", True), ("survival_full", False)):
        assert {(r["study_id"], r["suggestion"]): int(r["days"]) for r in got[view]} == days(kept_only)
    assert {r["study_id"] for r in got["survival"]} == {"audit-a", "audit-b"}
    assert max(int(r["days"]) for r in got["survival"] if r["study_id"] == "audit-a") == 1
    assert max(int(r["days"]) for r in got["survival"] if r["study_id"] == "audit-b") == 2

    weights: Counter[tuple[str, str, str]] = Counter()
    crawls: dict[tuple[str, str, str], set[str]] = {}
    for r in ROWS["associations"]:
        if r["engine"] == "ddg" and r["network"] == "trimmed":
            key = (study_of[r["crawl_id"]], r["source_reduced"], r["target_reduced"])
            weights[key] += r["edges"]
            crawls.setdefault(key, set()).add(r["crawl_id"])
    assoc = {(r["study_id"], r["source_reduced"], r["target_reduced"]): r for r in got["assoc"]}
    assert {k: int(r["weight"]) for k, r in assoc.items()} == dict(weights)
    assert {k: int(r["crawls"]) for k, r in assoc.items()} == {k: len(v) for k, v in crawls.items()}

    kept = [r for r in edges if r["kept"]]
    for row in got["share"]:
        mine = {(r["crawl_id"], r["target"]) for r in kept if study_of[r["crawl_id"]] == row["study_id"]}
        assert int(row["suggestions"]) == len(mine)
    assert len(got["share"]) == 2
