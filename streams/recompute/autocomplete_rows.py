"""Rows of the autocomplete tables for one completed crawl (pure; the processor does the I/O).

A crawl here is one root's crawl (crawl_id, engine, root) as its ``autocomplete_node``
events and its ``crawl_completed`` marker recorded it. Churn and nmi compare it with
the root's previous completed crawl on the full network; the association network is
built on the trimmed network (``analytics.stats.autocomplete_network``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from analytics.stats.autocomplete import (
    Node,
    churn,
    network_texts,
    nmi,
    platforms_mentioned,
    suggestion_sets,
    text_key,
    word_distribution,
)
from analytics.stats.autocomplete_network import DEFAULT_TRIMMING_RULE, association_edges, is_trimmed


@dataclass(frozen=True)
class CompletedCrawl:
    engine: str
    root: str
    crawl_id: str
    completed_at: str  # the marker's received_at, "YYYY-MM-DD HH:MM:SS.fff" UTC
    max_depth: int
    trimming_rule: str
    n_nodes: int
    n_edges: int
    n_failed: int
    nodes: tuple[Node, ...]
    n_blocked: int = 0
    study_id: str = ""

    @property
    def rule(self) -> str:
        return self.trimming_rule or DEFAULT_TRIMMING_RULE

    def _key(self) -> dict[str, Any]:
        return {"engine": self.engine, "root": self.root, "crawl_id": self.crawl_id}


def edge_rows(crawl: CompletedCrawl, computed_at: str) -> list[dict[str, Any]]:
    """Every edge, including those to nodes already seen and self-loops (flagged)."""
    rows = []
    for node in crawl.nodes:
        for rank, text in node.suggestions:
            rows.append(
                {
                    **crawl._key(),
                    "completed_at": crawl.completed_at,
                    "source": node.query,
                    "target": text,
                    "rank": rank,
                    "depth": node.depth,
                    "self_loop": int(text_key(text) == text_key(node.query)),
                    "trimmed": int(is_trimmed(crawl.root, text, crawl.rule)),
                    "platforms": sorted(platforms_mentioned(text)),
                    "computed_at": computed_at,
                }
            )
    return rows


def crawl_nmi(crawl: CompletedCrawl, previous: CompletedCrawl | None) -> float:
    """nmi between the word distributions of the two networks (root words left out).

    A crawl with failed nodes (blocked, error) has holes, not a changed network: it gets no
    nmi and no churn, and is never the previous crawl of another (see the processor)."""
    if previous is None or crawl.n_failed:
        return math.nan
    return nmi(
        word_distribution(network_texts(previous.nodes), crawl.root),
        word_distribution(network_texts(crawl.nodes), crawl.root),
    )


def crawl_row(crawl: CompletedCrawl, previous: CompletedCrawl | None, computed_at: str) -> dict[str, Any]:
    value = crawl_nmi(crawl, previous)
    return {
        **crawl._key(),
        "completed_at": crawl.completed_at,
        "previous_crawl_id": previous.crawl_id if previous else "",
        "study_id": crawl.study_id,
        "n_nodes": crawl.n_nodes,
        "n_edges": crawl.n_edges,
        "n_failed": crawl.n_failed,
        "n_blocked": crawl.n_blocked,
        "max_depth": crawl.max_depth,
        "trimming_rule": crawl.rule,
        "nmi": None if math.isnan(value) else value,  # NULL for a root's first crawl
        "computed_at": computed_at,
    }


def churn_rows(
    crawl: CompletedCrawl, previous: CompletedCrawl | None, computed_at: str
) -> list[dict[str, Any]]:
    if previous is None or crawl.n_failed:
        return []
    cells = churn(suggestion_sets(previous.nodes), suggestion_sets(crawl.nodes))
    return [
        {
            **crawl._key(),
            "previous_crawl_id": previous.crawl_id,
            "completed_at": crawl.completed_at,
            "rank": rank,
            "depth": depth,
            "churn": value,
            "computed_at": computed_at,
        }
        for (rank, depth), value in sorted(cells.items())
    ]


def association_rows(crawl: CompletedCrawl, computed_at: str) -> list[dict[str, Any]]:
    edges = association_edges([(crawl.root, crawl.nodes)], rule=crawl.rule)
    return [
        {
            **crawl._key(),
            "completed_at": crawl.completed_at,
            "source_reduced": source,
            "target_reduced": target,
            "edges": n,
            "computed_at": computed_at,
        }
        for (source, target), n in sorted(edges.items())
    ]
