"""Topic names and partition keys (DESIGN.md §4).

The partition key keeps related events on one partition, in order: an install's
extension events, a snapshot round's profiles, and a crawl's nodes with its
markers.

Wire format: a message value is one or more events as JSON lines (newline
separated), each with the server's ``received_at`` added. Ingest bundles the events
of one request that fall on the same partition into one message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Family:
    """One event family: its topic suffix, raw table and partition key."""

    name: str
    types: frozenset[str]
    raw_table: str
    key: Callable[[Mapping[str, Any]], bytes]

    def topic(self, prefix: str) -> str:
        return f"{prefix}.{self.name}"


def _extension_key(event: Mapping[str, Any]) -> bytes:
    return str(event["install_id"]).encode()


def _serp_key(event: Mapping[str, Any]) -> bytes:
    return f"{event['study_id']}\x1f{event['round_id']}\x1f{event['query']}".encode()


def _autocomplete_key(event: Mapping[str, Any]) -> bytes:
    return f"{event['engine']}\x1f{event['root']}".encode()


EXTENSION = Family("extension", frozenset({"serp_view", "click"}), "raw_extension_events", _extension_key)
SERP = Family("serp", frozenset({"serp_snapshot"}), "raw_serp_snapshots", _serp_key)
AUTOCOMPLETE = Family(
    "autocomplete",
    frozenset({"autocomplete_node", "crawl_started", "crawl_completed"}),
    "raw_autocomplete_events",
    _autocomplete_key,
)
FAMILIES: tuple[Family, ...] = (EXTENSION, SERP, AUTOCOMPLETE)
ALERTS_SUFFIX = "alerts"

FAMILY_BY_TYPE: dict[str, Family] = {t: f for f in FAMILIES for t in f.types}


def all_topics(prefix: str) -> list[str]:
    """Every topic the service needs, event families first."""
    return [f.topic(prefix) for f in FAMILIES] + [f"{prefix}.{ALERTS_SUFFIX}"]
