"""Simulated autocomplete crawl rounds, with planted drift and shocks (pure; no I/O here).

Each root has a pool of topic words. A suggestion for query q adds one pool word to
q; which words are offered drifts slowly from round to round (about ``drift`` of the
offers change), and in a shock round every root's offers are drawn from fresh words,
as after an algorithm update. The breadth-first crawl follows docs/method.md ("Breadth-first crawls"): each
suggestion is submitted once per crawl, down to ``max_depth``.
"""

from __future__ import annotations

import random
import uuid
import zlib
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from schemas.events import utc_text

WORDS = tuple(
    [
        "biography",
        "wife",
        "age",
        "net",
        "worth",
        "news",
        "height",
        "family",
        "election",
        "policy",
        "quotes",
        "house",
        "speech",
        "twitter",
        "youtube",
        "reddit",
        "scandal",
        "poll",
        "interview",
        "campaign",
        "books",
        "early",
        "life",
        "education",
        "career",
        "children",
        "parents",
        "salary",
        "facebook",
        "instagram",
        "linkedin",
        "podcast",
        "tour",
        "record",
    ]
)
EVENT_NAMESPACE = uuid.UUID("4a8d2f3e-9b1c-4d7e-8f6a-2c3b4d5e6f70")


@dataclass
class CrawlConfig:
    roots: Sequence[str] = (
        "asa hutchinson",
        "jeb bush",
        "ted cruz",
        "bernie sanders",
        "hillary clinton",
        "marco rubio",
        "john kasich",
        "martin omalley",
    )
    engine: str = "google"
    max_depth: int = 2
    per_query: int = 4  # suggestions per response
    drift: float = 0.03
    shock_rounds: frozenset[int] = field(default_factory=frozenset)
    seed: int = 1
    study: str = "sim"


class AutocompleteSimulation:
    """Yields the events of crawl rounds: markers and one node event per submitted query."""

    def __init__(self, config: CrawlConfig) -> None:
        self.config = config
        rng = random.Random(config.seed)
        self.offers = {root: rng.sample(WORDS, 12) for root in config.roots}
        self.rng = rng

    def _advance(self, round_no: int) -> None:
        c = self.config
        for root, offers in self.offers.items():
            if round_no in c.shock_rounds:
                fresh = [f"{w}{round_no}" for w in self.rng.sample(WORDS, len(offers))]
                self.offers[root] = fresh
                continue
            for i in range(len(offers)):
                if self.rng.random() < c.drift:
                    offers[i] = self.rng.choice(WORDS)

    def suggestions(self, root: str, query: str) -> list[str]:
        """The query plus its best-ranked offered words: a stable ranking per query, so an
        offer that drifts away changes only the queries that ranked it on top."""
        offers = dict.fromkeys(self.offers[root])  # distinct, in order
        ranked = sorted(offers, key=lambda w: zlib.crc32(f"{query}|{w}".encode()))
        return [f"{query} {w}" for w in ranked[: self.config.per_query]]

    def crawl_round(self, round_no: int) -> Iterator[dict[str, Any]]:
        c = self.config
        if round_no > 0:
            self._advance(round_no)
        crawl_id = f"{c.study}-{c.engine}-r{round_no:04d}"
        for root in c.roots:
            yield self._event("crawl_started", crawl_id, root, max_depth=c.max_depth)
            seen, n_nodes, n_edges = {root}, 0, 0
            queue: deque[tuple[str, str | None, int]] = deque([(root, None, 0)])
            while queue:
                query, parent, depth = queue.popleft()
                texts = self.suggestions(root, query)
                n_nodes += 1
                n_edges += len(texts)
                yield self._event(
                    "autocomplete_node",
                    crawl_id,
                    root,
                    query=query,
                    parent=parent,
                    depth=depth,
                    status="ok",
                    suggestions=[
                        {"rank": r, "text": t, "self_loop": t == query, "type": ""}
                        for r, t in enumerate(texts, start=1)
                    ],
                )
                for text in texts:
                    if text not in seen and depth < c.max_depth:
                        seen.add(text)
                        queue.append((text, query, depth + 1))
            yield self._event(
                "crawl_completed",
                crawl_id,
                root,
                max_depth=c.max_depth,
                n_nodes=n_nodes,
                n_edges=n_edges,
                n_failed=0,
            )

    def _event(self, type_: str, crawl_id: str, root: str, **fields: Any) -> dict[str, Any]:
        ident = f"{type_}|{crawl_id}|{self.config.engine}|{root}|{fields.get('query', '')}"
        return {
            "type": type_,
            "schema_version": 1,
            "event_id": str(uuid.uuid5(EVENT_NAMESPACE, ident)),  # a repost deduplicates
            "sent_at": utc_text(datetime.now(UTC)),
            "crawl_id": crawl_id,
            **({"study_id": self.config.study} if type_ != "autocomplete_node" else {}),
            "engine": self.config.engine,
            "root": root,
            **fields,
        }
