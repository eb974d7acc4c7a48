"""Decode a batch of Kafka values and find what it touched."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from schemas.wire import parse_received_at


@dataclass
class DecodedBatch:
    """Events that decoded, their raw lines, and the ones that did not (with why)."""

    events: list[dict[str, Any]] = field(default_factory=list)
    lines: list[bytes] = field(default_factory=list)
    rejects: list[tuple[bytes, str]] = field(default_factory=list)


def decode_batch(values: Iterable[bytes], required: Sequence[str] = ()) -> DecodedBatch:
    """Parse the JSON lines of each value; keep the first copy of each event_id.

    A message that is not an event (hand-written into Kafka, say) is set aside with
    the reason, so it can never stall the batch it came in.
    """
    out = DecodedBatch()
    seen: set[str] = set()
    for value in (line for bundle in values for line in bundle.split(b"\n") if line):
        try:
            event = orjson.loads(value)
            if not isinstance(event, dict):
                raise ValueError("not a JSON object")
            for name in ("event_id", "received_at", *required):
                if not isinstance(event.get(name), str):
                    raise ValueError(f"missing or non-text {name}")
            parse_received_at(event["received_at"])
        except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
            out.rejects.append((value, f"undecodable: {exc}"))
            continue
        if event["event_id"] in seen:
            continue
        seen.add(event["event_id"])
        out.events.append(event)
        out.lines.append(value)
    return out


def slice_keys(events: Iterable[Mapping[str, Any]], seconds: int) -> set[tuple[str, str, int]]:
    """(experiment_id, engine, slice start as unix seconds) for every extension event."""
    keys = set()
    for e in events:
        ts = parse_received_at(e["received_at"]).timestamp()
        keys.add((e["experiment_id"], e["engine"], int(ts // seconds * seconds)))
    return keys


def install_keys(events: Iterable[Mapping[str, Any]]) -> set[tuple[str, str, str]]:
    """(experiment_id, engine, install_id) for every extension event."""
    return {(e["experiment_id"], e["engine"], e["install_id"]) for e in events}
