"""Autocomplete events (docs/method.md, "Breadth-first crawls"), built through the schema
models so they validate.

Event ids are UUIDv5 of (crawl_id, engine, root, what): a node re-sent after a resume
or a repost has the same id, and ingest drops the copy.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from collectors.autocomplete.bfs import Node
from collectors.autocomplete.parsers import ParsedSuggestion, Status, query_key
from schemas.events import SCHEMA_VERSION, AutocompleteNode, CrawlCompleted, CrawlStarted, Suggestion

NAMESPACE = uuid.UUID("5b0e2f4e-5a8f-4c4b-9d7e-2c1f3a6b8d90")


def event_id(crawl_id: str, engine: str, root: str, what: str) -> uuid.UUID:
    """Deterministic id; ``what`` is ``node:<query_key>``, ``crawl_started`` or ``crawl_completed``."""
    return uuid.uuid5(NAMESPACE, "\x1f".join((crawl_id, engine, root, what)))


def node_event_id(crawl_id: str, engine: str, root: str, query: str) -> uuid.UUID:
    return event_id(crawl_id, engine, root, f"node:{query_key(query)}")


def _now(sent_at: datetime | None) -> datetime:
    return sent_at or datetime.now(UTC)


def node_event(
    *,
    crawl_id: str,
    engine: str,
    root: str,
    node: Node,
    suggestions: Sequence[ParsedSuggestion],
    status: Status,
    raw_ref: str = "",
    sent_at: datetime | None = None,
) -> dict[str, Any]:
    model = AutocompleteNode(
        type="autocomplete_node",
        schema_version=SCHEMA_VERSION,
        event_id=node_event_id(crawl_id, engine, root, node.query),
        sent_at=_now(sent_at),
        crawl_id=crawl_id,
        engine=engine,
        root=root,
        query=node.query,
        parent=node.parent,
        depth=node.depth,
        suggestions=[
            Suggestion(rank=s.rank, text=s.text, self_loop=s.self_loop, type=s.type) for s in suggestions
        ],
        status=status,
        raw_ref=raw_ref,
    )
    return model.model_dump(mode="json")


def _marker(
    model: type[CrawlStarted | CrawlCompleted],
    kind: str,
    *,
    crawl_id: str,
    engine: str,
    root: str,
    sent_at: datetime | None,
    **fields: Any,
) -> dict[str, Any]:
    """A crawl marker; its id comes from (crawl, engine, root, kind), so a re-send dedupes."""
    marker = model(
        type=kind,
        schema_version=SCHEMA_VERSION,
        event_id=event_id(crawl_id, engine, root, kind),
        sent_at=_now(sent_at),
        crawl_id=crawl_id,
        engine=engine,
        root=root,
        **fields,
    )
    return marker.model_dump(mode="json")


def started_event(
    *,
    crawl_id: str,
    engine: str,
    root: str,
    max_depth: int,
    trimming_rule: str,
    study_id: str = "",
    sent_at: datetime | None = None,
) -> dict[str, Any]:
    return _marker(
        CrawlStarted,
        "crawl_started",
        crawl_id=crawl_id,
        engine=engine,
        root=root,
        sent_at=sent_at,
        study_id=study_id,
        max_depth=max_depth,
        trimming_rule=trimming_rule,
    )


def completed_event(
    *,
    crawl_id: str,
    engine: str,
    root: str,
    max_depth: int,
    trimming_rule: str,
    n_nodes: int,
    n_edges: int,
    n_failed: int,
    study_id: str = "",
    sent_at: datetime | None = None,
) -> dict[str, Any]:
    return _marker(
        CrawlCompleted,
        "crawl_completed",
        crawl_id=crawl_id,
        engine=engine,
        root=root,
        sent_at=sent_at,
        study_id=study_id,
        max_depth=max_depth,
        trimming_rule=trimming_rule,
        n_nodes=n_nodes,
        n_edges=n_edges,
        n_failed=n_failed,
    )
