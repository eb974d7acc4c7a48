"""One crawl round: every (engine, root) breadth-first, concurrently, politely, resumably.

Per node the order is fetch -> archive -> emit the event -> journal it -> advance the
frontier. A node is done once journaled; a resumed crawl replays journaled results
into the frontier instead of requesting them again (see ``bfs`` and ``state``). An
interrupted node is requested again and its event re-sent with the same event id.

A root whose own request failed (offline, blocked: so every request of it failed) is
journaled as ``failed`` and sends nothing: its ``crawl_started`` goes out with the root's
node, only once that succeeded. Stored as completed, it was a crawl with no data that
reports and the board counted as a round (issue 40); started but never completed, it
would hold back its round's shock check for good (it waits for every started root).
"""

from __future__ import annotations

import asyncio
import logging
import typing
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from collectors.autocomplete.bfs import Frontier, Node
from collectors.autocomplete.engines import EngineAdapter
from collectors.autocomplete.events import completed_event, node_event, started_event
from collectors.autocomplete.fetch import EngineClient, Fetched, open_clients
from collectors.autocomplete.parsers import MAX_TEXT, query_key
from collectors.autocomplete.politeness import Politeness
from collectors.autocomplete.state import CrawlJournal, CrawlParams
from collectors.common.archive import Archive
from collectors.common.exceptions import CrawlConfigError, CrawlStateError, unwrap_group
from collectors.common.sinks import EventSink
from schemas.events import CrawlStarted

log = logging.getLogger(__name__)

FAILED = frozenset({"blocked", "error"})
MAX_DEPTH_LIMIT = 16
"""The event schema's limit on ``depth``."""

ProgressHook = Callable[[str, str, int, int], None]
"""(engine, root, nodes done, nodes known so far)."""


@dataclass
class RootSummary:
    engine: str
    root: str
    n_nodes: int = 0
    n_edges: int = 0
    n_failed: int = 0
    completed: bool = False
    capped: bool = False
    fetched_nothing: bool = False
    """The root's own request failed: nothing sent to the store, not completed."""
    statuses: Counter[str] = field(default_factory=Counter)


@dataclass
class CrawlSummary:
    crawl_id: str
    roots: list[RootSummary]
    requests: dict[str, int]
    breaker_opened: dict[str, int]

    @property
    def completed(self) -> bool:
        return all(r.completed for r in self.roots)

    @property
    def ended(self) -> bool:
        """Nothing left to request: every root completed or fetched nothing (retrying those
        needs a new crawl id, as their events would reuse this crawl's ids)."""
        return all(r.completed or r.fetched_nothing for r in self.roots)

    @property
    def failed_roots(self) -> list[RootSummary]:
        return [r for r in self.roots if r.fetched_nothing]


def check_params(params: CrawlParams) -> None:
    """Reject what would only fail later, as an event the schema refuses."""
    if not params.roots:
        raise CrawlConfigError("no roots to crawl")
    if not 0 <= params.max_depth <= MAX_DEPTH_LIMIT:
        raise CrawlConfigError(f"max depth must be within 0..{MAX_DEPTH_LIMIT}")
    rules = typing.get_args(CrawlStarted.model_fields["trimming_rule"].annotation)
    if params.trimming_rule not in rules:
        raise CrawlConfigError(f"trimming rule must be one of {', '.join(rules)}")
    for root in params.roots:
        if not 0 < len(root) <= MAX_TEXT:
            raise CrawlConfigError(f"a root must have 1..{MAX_TEXT} characters: {root[:40]!r}...")


def _node_record(engine: str, root: str, node: Node, fetched: Fetched, raw_ref: str) -> dict[str, Any]:
    parsed = fetched.parsed
    return {
        "kind": "node",
        "engine": engine,
        "root": root,
        "query": node.query,
        "parent": node.parent,
        "depth": node.depth,
        "rank": node.rank,
        "status": parsed.status,
        "detail": parsed.detail,
        "raw_ref": raw_ref,
        "http_status": fetched.raw.http_status,
        "attempts": fetched.attempts,
        "fetched_at": fetched.raw.fetched_at.isoformat(),
        "suggestions": [s.to_json() for s in parsed.suggestions],
    }


class _RootCrawl:
    """The crawl of one root on one engine."""

    def __init__(
        self,
        client: EngineClient,
        root: str,
        journal: CrawlJournal,
        archive: Archive,
        sink: EventSink,
        on_progress: ProgressHook | None,
    ) -> None:
        self.client = client
        self.engine = client.adapter.engine
        self.root = root
        self.journal = journal
        self.params = journal.params
        self.archive = archive
        self.sink = sink
        self.on_progress = on_progress
        self.frontier = Frontier(root, self.params.max_depth, self.params.node_cap)
        self.summary = RootSummary(self.engine, root)
        self.started = journal.has("started", self.engine, root)

    def _progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.engine, self.root, self.frontier.n_nodes, self.frontier.n_seen)

    def _complete(self, query: str, status: str, suggestions: Sequence[dict[str, Any]]) -> None:
        pairs = [(s["rank"], s["text"]) for s in suggestions]
        self.frontier.complete(query, pairs, failed=status in FAILED)
        self.summary.statuses[status] += 1
        self._progress()

    def _marker(self) -> dict[str, Any]:
        p = self.params
        return {
            "crawl_id": p.crawl_id,
            "study_id": p.study,
            "engine": self.engine,
            "root": self.root,
            "max_depth": p.max_depth,
            "trimming_rule": p.trimming_rule,
        }

    async def run(self) -> RootSummary:
        s, f = self.summary, self.frontier
        done_before = next(self.journal.of("completed", self.engine, self.root), None)
        if done_before is not None:
            s.n_nodes, s.n_edges = done_before["n_nodes"], done_before["n_edges"]
            s.n_failed, s.completed = done_before["n_failed"], True
            return s
        if (failed := next(self.journal.of("failed", self.engine, self.root), None)) is not None:
            return self._fetched_nothing(failed["status"])
        replay = {query_key(r["query"]): r for r in self.journal.of("node", self.engine, self.root)}
        self._progress()
        while not f.finished:
            async with asyncio.TaskGroup() as tg:
                for node in f.pending():
                    if (record := replay.get(node.key)) is not None:
                        self._complete(node.query, record["status"], record["suggestions"])
                    else:
                        tg.create_task(self._visit(node))
        if s.fetched_nothing:
            return s
        s.n_nodes, s.n_edges, s.n_failed, s.capped = f.n_nodes, f.n_edges, f.n_failed, f.capped
        done = completed_event(**self._marker(), n_nodes=s.n_nodes, n_edges=s.n_edges, n_failed=s.n_failed)
        await self.sink.emit([done])
        counts = {"n_nodes": s.n_nodes, "n_edges": s.n_edges, "n_failed": s.n_failed}
        await self._journal({"kind": "completed", "capped": s.capped, **counts})
        s.completed = True
        return s

    def _fetched_nothing(self, status: str) -> RootSummary:
        s = self.summary
        s.n_nodes = s.n_failed = 1
        s.fetched_nothing = True
        if not s.statuses:  # resumed: the status comes from the journal
            s.statuses[status] += 1
        return s

    async def _journal(self, record: dict[str, Any]) -> None:
        full = {"kind": record["kind"], "engine": self.engine, "root": self.root, **record}
        await asyncio.to_thread(self.journal.append, full)

    async def _visit(self, node: Node) -> None:
        fetched = await self.client.fetch(node.query)
        raw, parsed = fetched.raw, fetched.parsed
        raw_ref = ""
        if raw.http_status:
            meta = {
                "engine": self.engine,
                "format": self.client.adapter.format,
                "url": raw.url,
                "query": node.query,
                "status": raw.http_status,
                "fetched_at": raw.fetched_at.isoformat(),
                "content_type": raw.content_type,
                "charset": raw.charset,
            }
            raw_ref = await asyncio.to_thread(self.archive.put, raw.body, meta)
        if parsed.status in FAILED:
            log.warning(
                "%s %r (root %r): %s, %s", self.engine, node.query, self.root, parsed.status, parsed.detail
            )
        event = node_event(
            crawl_id=self.params.crawl_id,
            engine=self.engine,
            root=self.root,
            node=node,
            suggestions=parsed.suggestions,
            status=parsed.status,
            raw_ref=raw_ref,
        )
        record = _node_record(self.engine, self.root, node, fetched, raw_ref)
        if node.depth == 0 and parsed.status in FAILED:
            await self._journal({**record, "kind": "failed"})  # nothing sent (the module's docstring)
            self._complete(node.query, parsed.status, record["suggestions"])
            self._fetched_nothing(parsed.status)
            return
        if not self.started:
            await self.sink.emit([started_event(**self._marker()), event])
            await self._journal({"kind": "started"})
            self.started = True
        else:
            await self.sink.emit([event])
        await self._journal(record)
        self._complete(node.query, parsed.status, record["suggestions"])


async def run_crawl(
    journal: CrawlJournal,
    adapters: Sequence[EngineAdapter],
    *,
    archive: Archive,
    sink: EventSink,
    politeness: Politeness | None = None,
    on_progress: ProgressHook | None = None,
    notify: Callable[[str], None] | None = None,
) -> CrawlSummary:
    """Crawl (or finish crawling) every root of ``journal.params`` on every engine.

    ``adapters`` must be the journal's (engine, format) pairs; their base URLs may
    differ from the first run (endpoints are not part of a crawl's identity).
    Marks the crawl finished once every root completed or fetched nothing (``ended``).
    """
    params = journal.params
    check_params(params)
    if sorted((a.engine, a.format) for a in adapters) != sorted(params.engines):
        raise CrawlStateError(
            f"crawl {params.crawl_id} is {params.engines}, adapters given are "
            f"{[(a.engine, a.format) for a in adapters]}"
        )
    politeness = politeness or Politeness()
    async with open_clients(adapters, politeness, notify=notify) as clients:
        crawls = [
            _RootCrawl(clients[a.engine], root, journal, archive, sink, on_progress)
            for a in adapters
            for root in params.roots
        ]
        try:
            async with asyncio.TaskGroup() as tg:
                for c in crawls:
                    tg.create_task(c.run())
        except BaseExceptionGroup as group:
            raise unwrap_group(group) from None
        summary = CrawlSummary(
            params.crawl_id,
            [c.summary for c in crawls],
            {e: c.requests for e, c in clients.items()},
            {e: c.breaker.times_opened for e, c in clients.items()},
        )
    if summary.ended and journal.finished_at is None:
        await asyncio.to_thread(journal.finish)
    return summary
