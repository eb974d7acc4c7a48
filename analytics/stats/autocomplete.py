"""Autocomplete audits (RAI, docs/method.md): suggestion sets, churn, survival, words and nmi.

One crawl of one root is a sequence of submitted `Node`s, as the `autocomplete_node`
events carry them. Everything here is a pure function of such crawls or of the
aggregates derived from them, so a stream processor can keep the aggregates
(suggestion sets, word counters) and redo the math at any time.

Trimming and association networks are in `autocomplete_network`, shock
detection in `autocomplete_shocks`.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import date, datetime

from analytics.stats.similarity import jaccard

RankDepth = tuple[int, int]
"""A (rank, depth) cell of a suggestion network: rank is 1-based, depth 0 is the root's own suggestions."""

SOCIAL_PLATFORMS: tuple[str, ...] = ("facebook", "twitter", "instagram", "linkedin", "reddit", "youtube")
"""The platforms the paper counts (§4.2). "x" is not counted for twitter: as a word it is mostly
something else ("malcolm x", "x factor"), and the study period predates the rename."""


@dataclass(frozen=True)
class Node:
    """One submitted query of a crawl and the engine's ranked suggestions for it.

    depth is the query's distance from the root (the root is 0); each suggestion is
    (rank, text) with rank the 1-based position in the engine's response. parent is
    the query that first suggested this one (None for the root).
    """

    query: str
    depth: int
    suggestions: tuple[tuple[int, str], ...] = ()
    parent: str | None = None

    def __post_init__(self) -> None:
        if self.depth < 0:
            raise ValueError(f"depth must be >= 0, got {self.depth}")
        if any(rank < 1 for rank, _ in self.suggestions):
            raise ValueError(f"ranks are 1-based, got {[r for r, _ in self.suggestions]}")


# --- words ----------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def _fold(text: str) -> str:
    # Unicode caseless matching (NFKC, casefold, NFKC again): "Ⅱ", "ß" and a decomposed "é"
    # compare equal to "ii", "ss" and the composed "é".
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def words(text: str, exclude: AbstractSet[str] = frozenset()) -> list[str]:
    """The text's words in order: NFKC-normalised, casefolded, split on non-word characters.

    Word characters are Unicode letters, digits and "_", so "o'rourke" is two words and
    "2018" is one. exclude holds words already in this form (e.g. from `words(root)`).
    """
    return [w for w in _WORD.findall(_fold(text)) if w not in exclude]


# --- suggestion sets and churn ----------------------------------------------------------


def text_key(text: str) -> str:
    """The identity of a query or suggestion: whitespace collapsed, casefolded.

    The same identity the crawler gives a query (collectors.autocomplete.parsers.query_key),
    since engines fold case and whitespace: "Asa  Hutchinson" is the node "asa hutchinson".
    """
    return " ".join(text.split()).casefold()


def suggestion_sets(
    nodes: Iterable[Node], *, first_occurrence: bool = True
) -> dict[RankDepth, frozenset[str]]:
    """S_{r,d}: the suggestions at rank r returned for the queries submitted at depth d.

    d is the depth of the submitted query (the suggestion's parent), as in the paper: the
    root's own suggestions are depth 0 ("gina raimondo freakonomics" for the root "gina
    raimondo" is at depth zero, rank nine).

    With first_occurrence (the paper's rule: "if a given node was linked to twice or more,
    we kept its depth and rank from the first occurrence") every suggestion is counted once,
    at its lowest depth and, within that depth, its best rank. Breadth-first order would
    pick the first parent in queue order instead; (depth, rank) is the order-independent
    stand-in, so replayed or reordered events give the same sets. Under this rule a
    suggestion equal to the root or to its own query is a link back to a node already
    placed (self-loops included) and is not counted again. Without first_occurrence every
    (rank, depth) it was returned at counts, self-loops included.

    The sets hold `text_key`s, so a change of case or spacing alone is not churn.
    """
    cells: defaultdict[RankDepth, set[str]] = defaultdict(set)
    if not first_occurrence:
        for node in nodes:
            for rank, text in node.suggestions:
                cells[(rank, node.depth)].add(text_key(text))
        return {cell: frozenset(texts) for cell, texts in sorted(cells.items())}
    nodes = list(nodes)
    roots = {text_key(node.query) for node in nodes if node.depth == 0}
    placed: dict[str, tuple[int, int]] = {}  # key -> (depth, rank) of its first occurrence
    for node in nodes:
        query = text_key(node.query)
        for rank, text in node.suggestions:
            key = text_key(text)
            if key == query or key in roots:
                continue
            position = (node.depth, rank)
            if key not in placed or position < placed[key]:
                placed[key] = position
    for key, (depth, rank) in placed.items():
        cells[(rank, depth)].add(key)
    return {cell: frozenset(texts) for cell, texts in sorted(cells.items())}


def churn(
    previous: Mapping[RankDepth, AbstractSet[str]], current: Mapping[RankDepth, AbstractSet[str]]
) -> dict[RankDepth, float]:
    """c_{r,d}(t, q) = 1 - Jaccard(S_{r,d}(t, q), S_{r,d}(t+1, q)) for consecutive crawls of one root.

    A cell present in only one crawl (or empty in the other) has churn 1.0: everything
    there appeared or disappeared. A cell empty in both is left out, not 0, because
    nothing was there to change and a zero would pull the mean churn down. Compare only
    crawls that completed (docs/method.md, "Breadth-first crawls"): a blocked branch would read as full churn.
    """
    out: dict[RankDepth, float] = {}
    for cell in sorted(set(previous) | set(current)):
        before, after = previous.get(cell, frozenset()), current.get(cell, frozenset())
        if before or after:
            out[cell] = 1.0 - jaccard(before, after)
    return out


def mean_churn(churns: Iterable[Mapping[RankDepth, float]]) -> dict[RankDepth, float]:
    """Average churn per (rank, depth) over all crawl pairs t and roots q (the paper's Equation 2).

    Pass one `churn` result per (root, consecutive crawl pair). Each cell is averaged over
    the pairs in which it was measured, each pair weighing the same; when every root has
    every cell in every pair this is exactly (1/|Q|)(1/|T|) sum_q sum_t c(t, q).
    """
    sums: defaultdict[RankDepth, float] = defaultdict(float)
    counts: defaultdict[RankDepth, int] = defaultdict(int)
    for pair in churns:
        for cell, value in pair.items():
            sums[cell] += value
            counts[cell] += 1
    return {cell: sums[cell] / counts[cell] for cell in sorted(sums)}


# --- survival ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Survival:
    """When a suggestion was seen: first and last day, and on how many distinct days."""

    first_seen: date
    last_seen: date
    days: int


def survival(appearances: Iterable[tuple[str, date]]) -> dict[str, Survival]:
    """Survival per suggestion: the number of distinct days it appeared during a study.

    Keyed by `text_key`, so case and spacing variants are one suggestion.

    A day is a calendar date the caller chose (say the crawl's UTC date); two crawls on
    one day count once. Timestamps are refused rather than silently truncated, since the
    day boundary depends on a time zone only the caller knows. Group the appearances by
    engine (and root, if wanted) before calling.
    """
    seen: defaultdict[str, set[date]] = defaultdict(set)
    for text, day in appearances:
        if isinstance(day, datetime):
            raise TypeError(f"survival counts calendar days; convert {day!r} to a date first")
        seen[text_key(text)].add(day)
    return {text: Survival(min(days), max(days), len(days)) for text, days in sorted(seen.items())}


# --- words in a network and nmi ---------------------------------------------------------


def network_texts(nodes: Iterable[Node]) -> frozenset[str]:
    """Every distinct suggestion (as a `text_key`) in a crawl's network, each once however often linked."""
    return frozenset(text_key(text) for node in nodes for _, text in node.suggestions)


def word_distribution(suggestion_texts: Iterable[str], root: str) -> Counter[str]:
    """Word counts over the distinct suggestion texts, leaving out the root's own words.

    The root's words are left out everywhere (the paper: "to prevent them from inflating
    similarity"). Texts are de-duplicated by `text_key` first because a network's nodes are
    unique.
    """
    root_words = frozenset(words(root))
    counts: Counter[str] = Counter()
    for text in {text_key(t) for t in suggestion_texts}:
        counts.update(words(text, exclude=root_words))
    return counts


def nmi(previous: Mapping[str, float], current: Mapping[str, float]) -> float:
    """The paper's Equation 3 between two crawls of one root:
    NMI = 2 I(S_t; S_t+1) / (H(S_t) + H(S_t+1)), the arithmetic-mean normalisation it names.

    S_t and S_t+1 are a word drawn from each crawl's word distribution P and Q. The paper
    leaves their joint distribution open; this reading couples them so that a word kept
    from t to t+1 stays itself as often as it can (the maximal coupling): mass min(P, Q) on
    the diagonal, and what is left of P paired independently with what is left of Q. Then
    NMI is 1 when nothing changed (equal distributions: the joint is the diagonal, I = H)
    and 0 when the vocabularies are disjoint (the joint is the independent product), the
    ends the paper's Figure 7 describes; it is symmetric. docs/method.md derives the sum.

    Two empty distributions are 1.0; exactly one empty is 0.0; two one-word distributions
    (zero entropy) are 1.0 when the word is the same, else 0.0. Counts must be non-negative.
    """
    p, q = _normalised(previous), _normalised(current)
    if not p and not q:
        return 1.0
    if not p or not q:
        return 0.0
    h = _entropy(p.values()) + _entropy(q.values())
    if h == 0.0:
        return 1.0 if p.keys() == q.keys() else 0.0
    kept = {w: min(p[w], q[w]) for w in sorted(p.keys() & q.keys())}
    overlap = math.fsum(kept.values())
    info = math.fsum(m * math.log(m / (p[w] * q[w])) for w, m in kept.items() if m > 0)
    if overlap < 1.0:  # the residuals r_P = P - min, r_Q = Q - min, paired independently
        info += math.fsum(_plogp_over(p[w] - kept.get(w, 0.0), p[w]) for w in sorted(p))
        info += math.fsum(_plogp_over(q[w] - kept.get(w, 0.0), q[w]) for w in sorted(q))
        info -= (1.0 - overlap) * math.log(1.0 - overlap)
    return min(1.0, max(0.0, 2.0 * info / h))


def _normalised(counts: Mapping[str, float]) -> dict[str, float]:
    """The distribution of word counts (zero counts dropped); negative counts are refused."""
    if any(v < 0 for v in counts.values()):
        raise ValueError("word counts must be non-negative")
    total = math.fsum(counts.values())
    return {w: v / total for w, v in sorted(counts.items()) if v > 0}


def _entropy(probabilities: Iterable[float]) -> float:
    return -math.fsum(x * math.log(x) for x in probabilities if x > 0)


def nmi_pooled(previous: Mapping[str, float], current: Mapping[str, float]) -> float:
    """Pooled information stability between two crawls of one root: 1 - I(W;T) / H(T).

    The project's first reading of the paper's Equation 3, kept beside `nmi` (column
    nmi_pooled; docs/method.md, "Information stability (nmi)"): T is the crawl (t or
    t+1, each with probability 1/2) and W a word drawn from that crawl's word distribution.
    Then H(T) = ln 2 and I(W;T) is the Jensen-Shannon divergence of the two distributions,
    so nmi = 1 - JSD(P, Q) / ln 2: 1 when nothing changed (equal distributions, whatever
    the totals), 0 when the vocabularies are disjoint, symmetric in its arguments.

    Two empty distributions are 1.0 (nothing changed); exactly one empty is 0.0 (all the
    words appeared or vanished). Counts must be non-negative; zero counts are ignored.
    """
    if any(v < 0 for v in previous.values()) or any(v < 0 for v in current.values()):
        raise ValueError("word counts must be non-negative")
    total_p, total_q = sum(previous.values()), sum(current.values())
    if total_p == 0 and total_q == 0:
        return 1.0
    if total_p == 0 or total_q == 0:
        return 0.0
    info = 0.0  # I(W;T) in nats, summed in sorted order so the result is reproducible
    for word in sorted(set(previous) | set(current)):
        p, q = previous.get(word, 0) / total_p, current.get(word, 0) / total_q
        m = (p + q) / 2
        info += (_plogp_over(p, m) + _plogp_over(q, m)) / 2
    return min(1.0, max(0.0, 1.0 - info / math.log(2)))


def _plogp_over(p: float, m: float) -> float:
    return p * math.log(p / m) if p > 0 else 0.0


# --- social media -----------------------------------------------------------------------


def platforms_mentioned(text: str) -> frozenset[str]:
    """The SOCIAL_PLATFORMS the text names as whole words, ignoring case ("youtuber" is not youtube)."""
    return frozenset(words(text)) & frozenset(SOCIAL_PLATFORMS)


def social_mentions(texts: Iterable[str]) -> Counter[str]:
    """How many of the texts mention each platform; every platform is a key, zeros included.

    A text naming a platform twice counts once. Pass one engine's and root's suggestions
    (distinct texts, or every appearance, as the report needs) to get the paper's counts.
    """
    counts: Counter[str] = Counter(dict.fromkeys(SOCIAL_PLATFORMS, 0))
    for text in texts:
        counts.update(platforms_mentioned(text))
    return counts
