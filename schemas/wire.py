"""The server's ``received_at`` as it travels on the wire (schemas/topics.py has the rest).

Ingest stamps every accepted event with it; the worker reads it back to find the
10-second slices a batch touched. One textual form (UTC, milliseconds) on both sides.
"""

from __future__ import annotations

from datetime import UTC, datetime

RECEIVED_AT_FORMAT = "%Y-%m-%d %H:%M:%S.%f"


def format_received_at(moment: datetime) -> str:
    """The one textual form of ``received_at`` (UTC, milliseconds) used on the wire."""
    return moment.astimezone(UTC).strftime(RECEIVED_AT_FORMAT)[:-3]


def parse_received_at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)
