"""Rows of the autocomplete tables for one completed crawl (pure; the processor does the I/O).

A crawl here is one root's crawl (crawl_id, engine, root) as its ``autocomplete_node``
events and its ``crawl_completed`` marker recorded it: the full network. As in the paper
(§3), every statistic is computed on the trimmed network first (``CompletedCrawl.trimmed``,
the crawl's trimming rule) and again on the full one, and each row says which in
``network``; the views show the trimmed rows by default. Churn and nmi compare a crawl
with the root's previous completed crawl in the same network.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from analytics.stats.autocomplete import (
    Node,
    churn,
    network_texts,
    nmi,
    nmi_pooled,
    platforms_mentioned,
    suggestion_sets,
    text_key,
    word_distribution,
)
from analytics.stats.autocomplete_network import (
    DEFAULT_TRIMMING_RULE,
    association_edges,
    is_trimmed,
    trim_crawl,
)
from analytics.stats.autocomplete_structure import churn_query_words, network_structure

Network = Literal["trimmed", "full"]
NETWORKS: tuple[Network, ...] = ("trimmed", "full")
"""The networks every statistic is stored for; the first is the default the views show."""


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
    network: Network = "full"  # which network `nodes` are: as crawled, or trimmed by `rule`

    @property
    def rule(self) -> str:
        return self.trimming_rule or DEFAULT_TRIMMING_RULE

    def trimmed(self) -> CompletedCrawl:
        """The same crawl on its trimmed network (`trim_crawl` with the crawl's rule)."""
        if self.network == "trimmed":
            return self
        return replace(self, nodes=trim_crawl(self.root, self.nodes, self.rule), network="trimmed")

    def in_network(self, network: Network) -> CompletedCrawl:
        return self.trimmed() if network == "trimmed" else self

    def _key(self) -> dict[str, Any]:
        return {"engine": self.engine, "root": self.root, "crawl_id": self.crawl_id}


def edge_rows(crawl: CompletedCrawl, computed_at: str) -> list[dict[str, Any]]:
    """Every edge of the full network, including those to nodes already seen and self-loops
    (flagged); ``kept`` marks the edges of the trimmed network."""
    kept = {
        (text_key(node.query), rank, text)
        for node in crawl.trimmed().nodes
        for rank, text in node.suggestions
    }
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
                    "kept": int((text_key(node.query), rank, text) in kept),
                    "platforms": sorted(platforms_mentioned(text)),
                    "computed_at": computed_at,
                }
            )
    return rows


def crawl_nmi(
    crawl: CompletedCrawl, previous: CompletedCrawl | None, measure: Callable[..., float] = nmi
) -> float:
    """nmi between the word distributions of the two networks (root words left out):
    ``measure`` is RAI's Equation 3 (`nmi`) or the earlier pooled reading (`nmi_pooled`).

    A crawl with failed nodes (blocked, error) has holes, not a changed network: it gets no
    nmi and no churn, and is never the previous crawl of another (see the processor)."""
    if previous is None or crawl.n_failed:
        return math.nan
    return measure(
        word_distribution(network_texts(previous.nodes), crawl.root),
        word_distribution(network_texts(crawl.nodes), crawl.root),
    )


def crawl_row(crawl: CompletedCrawl, previous: CompletedCrawl | None, computed_at: str) -> dict[str, Any]:
    """The crawl's row in its network: the marker's counts, the network's own size, and nmi."""
    value, pooled = crawl_nmi(crawl, previous), crawl_nmi(crawl, previous, nmi_pooled)
    node_keys = {text_key(crawl.root)} | {text_key(n.query) for n in crawl.nodes}
    node_keys |= {text_key(t) for n in crawl.nodes for _, t in n.suggestions}
    return {
        **crawl._key(),
        "network": crawl.network,
        "net_nodes": len(node_keys),
        "net_edges": sum(len(n.suggestions) for n in crawl.nodes),
        "completed_at": crawl.completed_at,
        "previous_crawl_id": previous.crawl_id if previous else "",
        "study_id": crawl.study_id,
        "n_nodes": crawl.n_nodes,
        "n_edges": crawl.n_edges,
        "n_failed": crawl.n_failed,
        "n_blocked": crawl.n_blocked,
        "max_depth": crawl.max_depth,
        "trimming_rule": crawl.rule,
        # NULL for a root's first crawl; the column nmi keeps the pooled reading (migration 0040)
        "nmi_eq3": None if math.isnan(value) else value,
        "nmi": None if math.isnan(pooled) else pooled,
        "computed_at": computed_at,
    }


def churn_rows(
    crawl: CompletedCrawl, previous: CompletedCrawl | None, computed_at: str
) -> list[dict[str, Any]]:
    if previous is None or crawl.n_failed:
        return []
    cells = churn(suggestion_sets(previous.nodes), suggestion_sets(crawl.nodes))
    lengths = churn_query_words(previous.nodes, crawl.nodes)
    return [
        {
            **crawl._key(),
            "network": crawl.network,
            "previous_crawl_id": previous.crawl_id,
            "completed_at": crawl.completed_at,
            "rank": rank,
            "depth": depth,
            "churn": value,
            "query_words": lengths[(rank, depth)],
            "computed_at": computed_at,
        }
        for (rank, depth), value in sorted(cells.items())
    ]


def association_rows(crawl: CompletedCrawl, computed_at: str) -> list[dict[str, Any]]:
    """The association network of the crawl's network (the paper's is the trimmed one, §4.4)."""
    rule = crawl.rule if crawl.network == "trimmed" else "none"
    edges = association_edges([(crawl.root, crawl.nodes)], rule=rule)
    return [
        {
            **crawl._key(),
            "network": crawl.network,
            "completed_at": crawl.completed_at,
            "source_reduced": source,
            "target_reduced": target,
            "edges": n,
            "computed_at": computed_at,
        }
        for (source, target), n in sorted(edges.items())
    ]


def structure_rows(crawl: CompletedCrawl, computed_at: str) -> list[dict[str, Any]]:
    """One row per node of the crawl's network (`network_structure`): the paper's Figures 2-4.

    A crawl with failed nodes gets none: a blocked query's missing out-links would read as
    a query that produced no suggestions.
    """
    if crawl.n_failed:
        return []
    return [
        {
            **crawl._key(),
            "network": crawl.network,
            "study_id": crawl.study_id,
            "completed_at": crawl.completed_at,
            "node": n.node,
            "depth": n.depth,
            "rank": n.rank,
            "submitted": int(n.submitted),
            "n_suggestions": n.n_suggestions,
            "k_in": n.k_in,
            "k_out": n.k_out,
            "words": n.words,
            "length_changes": list(n.length_changes),
            "computed_at": computed_at,
        }
        for n in network_structure(crawl.root, crawl.nodes)
    ]
