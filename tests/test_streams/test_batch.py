from __future__ import annotations

from datetime import UTC, datetime

import orjson

from schemas.wire import format_received_at, parse_received_at
from streams.recompute.batch import decode_batch, slice_keys
from studies.arrangement.write.clicks_by_rank import recompute_sql


def line(event_id: str, at: str = "2026-11-21 10:00:30.123", **kw: str) -> bytes:
    return orjson.dumps(
        {"event_id": event_id, "received_at": at, "experiment_id": "e", "engine": "google", **kw}
    )


def test_received_at_round_trips() -> None:
    moment = datetime(2026, 11, 21, 10, 0, 30, 123000, tzinfo=UTC)
    assert parse_received_at(format_received_at(moment)) == moment


def test_decode_keeps_first_copy_and_rejects_garbage() -> None:
    batch = decode_batch(
        [
            line("a"),
            line("a"),
            b"{nope",
            orjson.dumps({"event_id": "b"}),
            line("c"),
            orjson.dumps({"event_id": "d", "received_at": 5, "experiment_id": "e"}),
        ],
        ("experiment_id",),
    )
    assert [e["event_id"] for e in batch.events] == ["a", "c"]
    assert [r[1].split(":")[0] for r in batch.rejects] == ["undecodable"] * 3


def test_slice_keys_floor_to_the_minute() -> None:
    events = decode_batch([line("a", "2026-11-21 10:00:59.999"), line("b", "2026-11-21 10:01:00.000")]).events
    keys = slice_keys(events, 60)
    base = int(datetime(2026, 11, 21, 10, 0, tzinfo=UTC).timestamp())
    assert keys == {("e", "google", base), ("e", "google", base + 60)}


def test_recompute_sql_bounds_the_scan() -> None:
    sql = recompute_sql({("e'x", "google", 120), ("e", "bing", 60)})
    assert "toDateTime64(60, 3, 'UTC')" in sql and "toDateTime64(130, 3, 'UTC')" in sql
    assert "'e\\'x'" in sql


def test_bundled_values_are_split_into_events() -> None:
    bundle = line("a") + b"\n" + line("b") + b"\n" + b"{broken"
    batch = decode_batch([bundle, line("c")])
    assert [e["event_id"] for e in batch.events] == ["a", "b", "c"]
    assert len(batch.rejects) == 1
