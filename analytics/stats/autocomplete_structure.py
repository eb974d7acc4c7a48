"""Suggestion-network structure (RAI §4.1-4.2, Figures 2-4): depths, degrees, merge points, lengths.

The paper describes each root's network per crawl with standard network measures:
out-degree k_out (how many suggestions a query produced), in-degree k_in (how many
queries suggested a node; k_in > 1 is a merge point), the number of words of each query
and how it changes from a query to its suggestion, all against depth. `network_structure`
gives those per node of one crawl's network, full or trimmed (`trim_crawl` first); the
worker stores them and the views and the report aggregate them. `spearman_p` turns a rank
correlation the views compute into the paper's significance.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from scipy import stats

from analytics.stats.autocomplete import Node, RankDepth, text_key


@dataclass(frozen=True)
class NetworkNode:
    """One node of a crawl's suggestion network.

    depth and rank are those of its first occurrence as the crawler recorded them: the root
    is depth 0 (rank 0), a submitted query keeps its recorded depth, and a suggestion never
    submitted (one found at the maximum depth) sits one below the shallowest query in the
    network that suggested it, at that query's best rank for it. Degrees count distinct
    links to other nodes: a suggestion equal to its own query (a self-loop) is no link, so
    that k_in > 1 means that two different queries converge on the node.
    """

    node: str  # the text_key
    depth: int
    rank: int
    submitted: bool  # the crawl submitted it (it has an out-degree to speak of)
    n_suggestions: int  # distinct suggestions its response had in this network, self-loop included
    k_in: int
    k_out: int
    words: int  # whitespace-separated words, the paper's query length
    length_changes: tuple[int, ...]  # words(suggestion) - words(node) per out-link, in rank order

    @property
    def merge_point(self) -> bool:
        return self.k_in > 1


def query_words(text: str) -> int:
    """A query's length: its whitespace-separated words ("o'rourke" is one word, as typed)."""
    return len(text.split())


def network_structure(root: str, nodes: Iterable[Node]) -> tuple[NetworkNode, ...]:
    """Every node of one crawl's network with its depth, rank, degrees and length.

    nodes are the crawl's submitted queries as stored (the full network) or as `trim_crawl`
    left them (the trimmed network). The network holds the root, every submitted query and
    every suggestion they returned. Sorted by (depth, rank, node).
    """
    root_key = text_key(root)
    submitted: dict[str, int] = {}  # key -> recorded depth
    out: dict[str, dict[str, int]] = {}  # key -> {target key: best rank}
    responses: dict[str, set[str]] = {}
    for node in nodes:
        key = text_key(node.query)
        submitted[key] = min(node.depth, submitted.get(key, node.depth))
        links = out.setdefault(key, {})
        for rank, text in node.suggestions:
            target = text_key(text)
            responses.setdefault(key, set()).add(target)
            if target != key:
                links[target] = min(rank, links.get(target, rank))
    first: dict[str, tuple[int, int]] = {root_key: (0, 0)}
    incoming: dict[str, set[str]] = {}
    for source, links in out.items():
        for target, rank in links.items():
            incoming.setdefault(target, set()).add(source)
            seen = (submitted[source] + 1, rank)
            if target != root_key and (target not in first or seen < first[target]):
                first[target] = seen
    for key, depth in submitted.items():
        first.setdefault(key, (depth, 0))  # suggested by no query in this network (the root, an orphan)
    result = []
    for key, (depth, rank) in first.items():
        links = out.get(key, {})
        words = query_words(key)
        result.append(
            NetworkNode(
                node=key,
                depth=0 if key == root_key else submitted.get(key, depth),
                rank=rank,
                submitted=key in submitted,
                n_suggestions=len(responses.get(key, ())),
                k_in=len(incoming.get(key, ())),
                k_out=len(links),
                words=words,
                length_changes=tuple(
                    query_words(t) - words for t, _ in sorted(links.items(), key=lambda kv: (kv[1], kv[0]))
                ),
            )
        )
    return tuple(sorted(result, key=lambda n: (n.depth, n.rank, n.node)))


def spearman_p(rho: float, n: int) -> float:
    """Two-sided p-value of a Spearman correlation rho over n pairs (H0: no monotone relation).

    The t approximation with n - 2 degrees of freedom, as scipy.stats.spearmanr computes
    it: exact enough for the thousands of nodes a study has. NaN when undefined (n < 3,
    or rho is NaN because one variable never varies); 0.0 when |rho| is 1.
    """
    if n < 3 or math.isnan(rho):
        return math.nan
    if abs(rho) >= 1.0:
        return 0.0
    t = rho * math.sqrt((n - 2) / ((1.0 - rho) * (1.0 + rho)))
    return float(2 * stats.t.sf(abs(t), n - 2))


def placed_sources(nodes: Iterable[Node]) -> dict[RankDepth, dict[str, str]]:
    """The cells of `suggestion_sets` (first occurrence), each suggestion with the query that placed it.

    The same rule as `suggestion_sets`: a suggestion is counted once, at its lowest depth and
    best rank, never when it equals its own query or the root; of several queries placing it
    at the same (depth, rank), the first by text_key is its source.
    """
    nodes = list(nodes)
    roots = {text_key(node.query) for node in nodes if node.depth == 0}
    placed: dict[str, tuple[int, int, str]] = {}
    for node in nodes:
        query = text_key(node.query)
        for rank, text in node.suggestions:
            key = text_key(text)
            if key == query or key in roots:
                continue
            position = (node.depth, rank, query)
            if key not in placed or position < placed[key]:
                placed[key] = position
    cells: dict[RankDepth, dict[str, str]] = {}
    for key, (depth, rank, source) in placed.items():
        cells.setdefault((rank, depth), {})[key] = source
    return {cell: cells[cell] for cell in sorted(cells)}


def churn_query_words(previous: Iterable[Node], current: Iterable[Node]) -> dict[RankDepth, float]:
    """Per churn cell, the mean length of the queries that produced its suggestions in either crawl.

    The paper correlates churn with "the length of the query being submitted" (§4.3, §6);
    a cell (rank, depth) holds the suggestions of several queries, so each suggestion of
    each crawl contributes the length of the query that placed it there.
    """
    lengths: dict[RankDepth, list[int]] = {}
    for nodes in (previous, current):
        for cell, sources in placed_sources(nodes).items():
            lengths.setdefault(cell, []).extend(query_words(s) for s in sources.values())
    return {cell: sum(v) / len(v) for cell, v in sorted(lengths.items())}
