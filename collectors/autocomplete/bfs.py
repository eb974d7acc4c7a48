"""The breadth-first frontier of one root's crawl (RAI, Robertson et al. 2019, §3). Pure.

Rules, as in the paper:

- the root is depth 0; nodes up to ``max_depth`` are submitted, and the suggestions of
  a node at ``max_depth`` are recorded as edges but not queued;
- a query is submitted at most once per crawl (identity is ``query_key``: case and
  whitespace folded); an edge to a node already seen is counted but not queued;
- a node keeps the depth, parent and rank of its first occurrence.

The crawl advances level by level: a level's children are queued only when every node
of the level has a result, and in level order then rank order. So "first occurrence"
does not depend on which request finished first, and replaying saved results
rebuilds exactly the same frontier (how a crawl resumes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from collectors.autocomplete.parsers import query_key


@dataclass(frozen=True)
class Node:
    """A node to submit: the rank is its position in the parent's list (None for the root)."""

    query: str
    parent: str | None
    depth: int
    rank: int | None = None

    @property
    def key(self) -> str:
        return query_key(self.query)


class Frontier:
    """Which node to submit next, and the counts the ``crawl_completed`` marker reports.

    ``node_cap`` bounds the nodes submitted for the root (the root included); edges to
    nodes beyond the cap are still counted, so a capped crawl is visible in its counts.
    """

    def __init__(self, root: str, max_depth: int, node_cap: int | None = None) -> None:
        if max_depth < 0:
            raise ValueError("max_depth must be >= 0")
        if node_cap is not None and node_cap < 1:
            raise ValueError("node_cap must be >= 1")
        self.root = root
        self.max_depth = max_depth
        self.node_cap = node_cap
        first = Node(root, None, 0)
        self._seen: dict[str, Node] = {first.key: first}
        self._level: list[Node] = [first]
        self._results: dict[str, tuple[tuple[int, str], ...]] = {}
        self.n_nodes = 0
        self.n_edges = 0
        self.n_failed = 0
        self.capped = False

    @property
    def finished(self) -> bool:
        return not self._level

    @property
    def depth(self) -> int:
        """Depth of the level being crawled (-1 once finished)."""
        return self._level[0].depth if self._level else -1

    @property
    def n_seen(self) -> int:
        """Nodes discovered and scheduled so far (an upper bound for the progress bar)."""
        return len(self._seen)

    def pending(self) -> list[Node]:
        """Nodes of the current level still waiting for a result, in level order."""
        return [n for n in self._level if n.key not in self._results]

    def complete(self, query: str, suggestions: Sequence[tuple[int, str]], *, failed: bool = False) -> None:
        """Record a node's result as (rank, text) pairs; the last one of a level opens the next.

        A failed node (blocked, error) has no suggestions and is counted in ``n_failed``.
        """
        key = query_key(query)
        if key in self._results or all(n.key != key for n in self._level):
            raise KeyError(f"{query!r} is not pending at depth {self.depth}")
        self._results[key] = tuple(suggestions)
        self.n_nodes += 1
        self.n_edges += len(suggestions)
        self.n_failed += failed
        if len(self._results) == len(self._level):
            self._advance()

    def _advance(self) -> None:
        nxt: list[Node] = []
        for node in self._level:
            if node.depth >= self.max_depth:
                continue
            for rank, text in self._results[node.key]:
                child = Node(text, node.query, node.depth + 1, rank)
                if child.key in self._seen:
                    continue
                if self.node_cap is not None and len(self._seen) >= self.node_cap:
                    self.capped = True
                    continue
                self._seen[child.key] = child
                nxt.append(child)
        self._level = nxt
        self._results = {}
