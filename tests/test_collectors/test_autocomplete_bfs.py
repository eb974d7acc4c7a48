"""The breadth-first frontier, against hand-computed crawls of small scripted graphs."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import pytest

from collectors.autocomplete.bfs import Frontier, Node

# A self-loop (alpha -> alpha), a node reachable twice (alpha gamma, alpha beta delta),
# an edge back to the root, and two nodes beyond depth 3.
GRAPH: dict[str, list[str]] = {
    "alpha": ["alpha", "alpha beta", "alpha gamma"],
    "alpha beta": ["alpha beta delta", "alpha gamma", "Alpha Beta"],
    "alpha gamma": ["alpha gamma epsilon", "alpha beta delta"],
    "alpha beta delta": ["alpha beta delta zeta", "alpha"],
    "alpha gamma epsilon": ["alpha gamma epsilon eta"],
    "alpha beta delta zeta": ["too deep"],
    "alpha gamma epsilon eta": ["too deep 2"],
    "too deep": ["never asked"],
}
EXPECTED_DEPTH_3 = [
    Node("alpha", None, 0, None),
    Node("alpha beta", "alpha", 1, 2),
    Node("alpha gamma", "alpha", 1, 3),
    Node("alpha beta delta", "alpha beta", 2, 1),  # also suggested by alpha gamma, at rank 2
    Node("alpha gamma epsilon", "alpha gamma", 2, 1),
    Node("alpha beta delta zeta", "alpha beta delta", 3, 1),
    Node("alpha gamma epsilon eta", "alpha gamma epsilon", 3, 1),
]
EDGES_DEPTH_3 = 3 + 3 + 2 + 2 + 1 + 1 + 1


def crawl(
    graph: Mapping[str, Sequence[str]],
    root: str,
    max_depth: int,
    node_cap: int | None = None,
    *,
    shuffle: random.Random | None = None,
) -> tuple[list[Node], Frontier]:
    """Drive a frontier against a dict; ``shuffle`` completes each level in random order."""
    frontier = Frontier(root, max_depth, node_cap)
    visited: list[Node] = []
    while not frontier.finished:
        level = frontier.pending()
        if shuffle is not None:
            shuffle.shuffle(level)
        for node in level:
            visited.append(node)
            frontier.complete(node.query, list(enumerate(graph.get(node.query.lower(), []), start=1)))
    return visited, frontier


def test_hand_computed_crawl() -> None:
    visited, frontier = crawl(GRAPH, "alpha", 3)
    assert visited == EXPECTED_DEPTH_3
    assert (frontier.n_nodes, frontier.n_edges, frontier.n_failed) == (7, EDGES_DEPTH_3, 0)
    assert not frontier.capped and frontier.depth == -1


def test_completion_order_within_a_level_does_not_change_the_crawl() -> None:
    for seed in range(20):
        visited, _ = crawl(GRAPH, "alpha", 3, shuffle=random.Random(seed))
        assert sorted(visited, key=EXPECTED_DEPTH_3.index) == EXPECTED_DEPTH_3


@pytest.mark.parametrize(("max_depth", "n_nodes"), [(0, 1), (1, 3), (2, 5), (3, 7), (4, 9), (8, 10)])
def test_depth_cap(max_depth: int, n_nodes: int) -> None:
    visited, _ = crawl(GRAPH, "alpha", max_depth)
    assert len(visited) == n_nodes
    assert max(n.depth for n in visited) <= max_depth


def test_node_cap_counts_the_root_and_keeps_counting_edges() -> None:
    visited, frontier = crawl(GRAPH, "alpha", 3, node_cap=4)
    assert [n.query for n in visited] == ["alpha", "alpha beta", "alpha gamma", "alpha beta delta"]
    assert frontier.capped
    assert frontier.n_edges == 3 + 3 + 2 + 2


def test_no_query_is_submitted_twice_case_folded() -> None:
    visited, _ = crawl({"a": ["A", "a b", "A  B"], "a b": ["a"]}, "a", 5)
    assert [n.query for n in visited] == ["a", "a b"]


def test_failed_nodes_are_counted_and_have_no_children() -> None:
    frontier = Frontier("r", 2)
    frontier.complete("r", [(1, "r x")])
    frontier.complete("r x", [], failed=True)
    assert frontier.finished and frontier.n_failed == 1 and frontier.n_nodes == 2


def test_completing_a_node_that_is_not_pending_is_a_bug() -> None:
    frontier = Frontier("r", 2)
    with pytest.raises(KeyError):
        frontier.complete("elsewhere", [])
    frontier.complete("r", [(1, "r x")])
    with pytest.raises(KeyError):
        frontier.complete("r", [])


def test_replaying_saved_results_rebuilds_the_same_frontier() -> None:
    """What resume does: results recorded mid-level are replayed into a fresh frontier."""
    live = Frontier("alpha", 3)
    saved: dict[str, list[tuple[int, str]]] = {}
    for _ in range(2):  # levels 0 and 1 done
        for node in live.pending():
            saved[node.query] = list(enumerate(GRAPH[node.query], start=1))
            live.complete(node.query, saved[node.query])
    first = live.pending()[0]
    saved[first.query] = list(enumerate(GRAPH[first.query], start=1))
    live.complete(first.query, saved[first.query])  # one node of level 2 done, then "crash"

    resumed = Frontier("alpha", 3)
    requested = []
    while not resumed.finished:
        for node in resumed.pending():
            if node.query in saved:
                resumed.complete(node.query, saved[node.query])
            else:
                requested.append(node)
                resumed.complete(node.query, list(enumerate(GRAPH[node.query], start=1)))
    assert requested == EXPECTED_DEPTH_3[4:]
    assert resumed.n_nodes == 7 and resumed.n_edges == EDGES_DEPTH_3
