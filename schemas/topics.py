"""Topic names and partition keys (docs/architecture.md).

The partition key keeps related events on one partition, in order: an install's
extension events (and its onboarding answers), a snapshot round's profiles, and a crawl's nodes with its
markers.

Wire format: a message value is one or more events as JSON lines (newline
separated), each with the server's ``received_at`` added. Ingest bundles the events
of one request that fall on the same partition into one message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

WORKER_GROUP = "auditstream-worker"
"""The workers' consumer group (faust's app id): ingest reads its committed offsets to know
which accepted events are stored."""


@dataclass(frozen=True)
class Family:
    """One event family: its topic suffix, raw table, partition key and the fields the worker
    needs to route an event (a message without them is a dead letter). Which event types
    belong to a family is said once, in ``schemas/event_types.py``."""

    name: str
    raw_table: str
    key: Callable[[Mapping[str, Any]], bytes]
    required: tuple[str, ...]

    def topic(self, prefix: str) -> str:
        return f"{prefix}.{self.name}"


def _extension_key(event: Mapping[str, Any]) -> bytes:
    return str(event["install_id"]).encode()


def _serp_key(event: Mapping[str, Any]) -> bytes:
    return f"{event['study_id']}\x1f{event['round_id']}\x1f{event['query']}".encode()


def _autocomplete_key(event: Mapping[str, Any]) -> bytes:
    return f"{event['engine']}\x1f{event['root']}".encode()


EXTENSION = Family(
    "extension", "raw_extension_events", _extension_key, ("experiment_id", "engine", "install_id")
)
SERP = Family("serp", "raw_serp_snapshots", _serp_key, ("study_id", "round_id", "query"))
AUTOCOMPLETE = Family(
    "autocomplete", "raw_autocomplete_events", _autocomplete_key, ("crawl_id", "engine", "root")
)
PANEL = Family("panel", "raw_install_profiles", _extension_key, ("install_id",))
"""The extension's onboarding answers (``install_profile``), one per install."""
FAMILIES: tuple[Family, ...] = (EXTENSION, SERP, AUTOCOMPLETE, PANEL)
ALERTS_SUFFIX = "alerts"


def all_topics(prefix: str) -> list[str]:
    """Every topic the service needs, event families first."""
    return [f.topic(prefix) for f in FAMILIES] + [f"{prefix}.{ALERTS_SUFFIX}"]
