"""Suggestion-network trimming and association networks (RAI, docs/method.md; paper §3 and §4.4).

Trimming: an edge query -> suggestion is trimmed when the suggestion drifts away from the
root (an "emergent root" such as "scott walker wisconsin recount" -> "recount"). The
stored events keep every edge and the crawl records its rule; the analyses run on the
trimmed view that `trim_crawl` returns.

Association networks: every edge becomes (what the source added, what the target adds),
with memory; see `reduce_suggestion`.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from types import MappingProxyType

from analytics.stats.autocomplete import Node, text_key, words

TrimmingRule = Callable[[Sequence[str], AbstractSet[str]], bool]
"""(root words, target words) -> keep the edge. Both are in `words` form; root words are never empty."""

TRIMMING_RULES: Mapping[str, TrimmingRule] = MappingProxyType(
    {
        # The paper's rule: the target names both the first and the last name of the root.
        "first_last_word": lambda root, target: root[0] in target and root[-1] in target,
        "all_words": lambda root, target: all(w in target for w in root),
        "any_word": lambda root, target: any(w in target for w in root),
        "none": lambda root, target: True,
    }
)
"""Trimming rules by the name a crawl records in `trimming_rule`."""

DEFAULT_TRIMMING_RULE = "first_last_word"


def _rule(name: str) -> TrimmingRule:
    try:
        return TRIMMING_RULES[name]
    except KeyError:
        raise ValueError(f"unknown trimming rule {name!r}; choose one of {sorted(TRIMMING_RULES)}") from None


def is_trimmed(root: str, target: str, rule: str = DEFAULT_TRIMMING_RULE) -> bool:
    """True when the edge into target is trimmed (marked, not kept in the analysed network).

    Words are compared whole, after `words` normalisation: for the root "scott walker",
    "Scott Walker's recount" is kept and "scott walkerton" is trimmed. A root without
    words trims nothing.
    """
    keep = _rule(rule)
    root_words = words(root)
    if not root_words:
        return False
    return not keep(root_words, frozenset(words(target)))


def trim_crawl(root: str, nodes: Iterable[Node], rule: str = DEFAULT_TRIMMING_RULE) -> tuple[Node, ...]:
    """The trimmed network of one crawl: kept edges only, and only the nodes they still reach.

    Each node loses its trimmed suggestions, and a node is dropped when no chain of kept
    edges leads to it from the root: the paper's emergent roots and everything below them.
    Trimming looks only at the target, so the edges into a node are all kept or all
    trimmed; a node whose edges are kept still goes when every query that suggested it went
    (e.g. "recount" -> "recount scott walker"). Node order is preserved.
    """
    _rule(rule)
    nodes = list(nodes)
    kept = [tuple((r, s) for r, s in node.suggestions if not is_trimmed(root, s, rule)) for node in nodes]
    links: dict[str, set[str]] = {}  # text_key of a query -> text_keys of its kept suggestions
    for node, suggestions in zip(nodes, kept, strict=True):
        links.setdefault(text_key(node.query), set()).update(text_key(s) for _, s in suggestions)
    reached, queue = {text_key(root)}, deque([text_key(root)])
    while queue:
        for key in sorted(links.get(queue.popleft(), ())):
            if key not in reached:
                reached.add(key)
                queue.append(key)
    return tuple(
        Node(node.query, node.depth, suggestions, node.parent)
        for node, suggestions in zip(nodes, kept, strict=True)
        if text_key(node.query) in reached
    )


def reduce_suggestion(query: str, suggestion: str, parent_reduction: str = "") -> str:
    """The words a suggestion adds to the query that produced it, or the query's own reduction if none.

    This is the paper's "reduced n-grams with memory" (§4.4), read with the authors'
    released code (gitronald/suggests, `add_metanodes`): an edge is named by what each side
    added to the step before it, and a step that adds nothing keeps the name of its source.
    Words are in `words` form and in the suggestion's order; parent_reduction is the
    reduction of query itself (for the root, the root's own words, see `root_reduction`).

    Depth 0: reduce_suggestion("asa hutchinson", "asa hutchinson biography", "asa hutchinson")
    is "biography".
    Depth 1, memory: the node "asa hutchinson biography" is now known as "biography";
    reduce_suggestion("asa hutchinson biography", "asa hutchinson bio", "biography") is
    "bio", so the association edge is "biography" -> "bio"; and
    reduce_suggestion("asa hutchinson biography", "asa hutchinson biography wife",
    "biography") is "wife" (not "biography wife": the parent's words are already known).
    A step that only removes or reorders words, e.g. reduce_suggestion("asa hutchinson
    biography", "biography asa hutchinson", "biography"), remembers "biography".
    """
    query_words = frozenset(words(query))
    added = [w for w in words(suggestion) if w not in query_words]
    return " ".join(added) if added else parent_reduction


def root_reduction(root: str) -> str:
    """How the root is named in an association network: its own words, normalised."""
    return " ".join(words(root))


Crawl = tuple[str, Sequence[Node]]
"""(root, nodes) of one crawl of one root."""


def association_edges(
    crawls: Iterable[Crawl], *, rule: str = DEFAULT_TRIMMING_RULE, self_loops: bool = False
) -> Counter[tuple[str, str]]:
    """Association-network edge weights: (source reduction, target reduction) counted across crawls.

    Each crawl is trimmed first (`trim_crawl` with rule; "none" keeps everything). Within a
    crawl each distinct query -> suggestion edge counts once, so the weight is the number of
    (crawl, edge) observations, the paper's "total count ... across all crawls and roots".
    A suggestion equal to its own query (a self-loop) is skipped unless self_loops.

    A submitted node is named by `reduce_suggestion` against its parent: node.parent when
    that query is in the crawl at a lower depth and suggested it, otherwise the
    lowest-(depth, rank) query that suggested it, otherwise (an orphan) the root.
    """
    edges: Counter[tuple[str, str]] = Counter()
    for root, crawl_nodes in crawls:
        nodes = sorted(trim_crawl(root, crawl_nodes, rule), key=lambda n: n.depth)
        suggested_by: dict[str, list[tuple[int, int, str]]] = {}  # key -> (depth, rank, source query)
        for node in nodes:
            for rank, text in node.suggestions:
                suggested_by.setdefault(text_key(text), []).append((node.depth, rank, node.query))
        names = {text_key(root): root_reduction(root)}  # text_key of a query -> its reduction
        for node in nodes:
            key = text_key(node.query)
            if key in names:
                continue
            sources = [s for s in suggested_by.get(key, []) if s[0] < node.depth and text_key(s[2]) in names]
            if node.parent is not None and any(text_key(s[2]) == text_key(node.parent) for s in sources):
                parent = node.parent
            elif sources:
                parent = min(sources)[2]
            else:
                parent = root
            names[key] = reduce_suggestion(parent, node.query, names[text_key(parent)])
        seen: set[tuple[str, str]] = set()
        for node in nodes:
            source, source_name = text_key(node.query), names[text_key(node.query)]
            for _, text in node.suggestions:
                target = text_key(text)
                if (target == source and not self_loops) or (source, target) in seen:
                    continue
                seen.add((source, target))
                edges[(source_name, reduce_suggestion(node.query, text, source_name))] += 1
    return edges
