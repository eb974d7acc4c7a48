"""An import chunk gives the same rows whether it is validated whole or line by line."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from ingest.import_chunks import _line_by_line, _whole, prepare_chunk


def events(n: int) -> list[dict[str, Any]]:
    traffic = ExtensionTraffic(TrafficConfig(experiment_id="imp", seed=3, installs=20))
    start = datetime(2026, 10, 1, 8, tzinfo=UTC)
    out = []
    for i, event in enumerate(itertools.islice(traffic.events(), n)):
        moment = start + timedelta(seconds=37 * i, microseconds=123_456)
        event["sent_at"] = moment.isoformat()
        received = moment + timedelta(milliseconds=250)
        if i % 3 == 1:  # the raw tables' export form (UTC, no zone)
            event["received_at"] = received.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        elif i % 3 == 2:  # ISO with another zone
            event["received_at"] = received.astimezone(UTC).replace(tzinfo=None).isoformat() + "+02:00"
        out.append(event)
    return out


def stored(body: bytes) -> list[dict[str, Any]]:
    """Rows as ClickHouse reads them: timestamps as instants."""
    rows = orjson.loads(body) if body.startswith(b"[") else [orjson.loads(x) for x in body.split(b"\n")]
    for row in rows:
        for key in ("sent_at", "received_at"):
            moment = datetime.fromisoformat(row[key])
            row[key] = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return rows


def test_whole_and_line_by_line_store_the_same_rows() -> None:
    sent = events(300)
    body = b"\n".join(orjson.dumps(e) for e in sent)
    whole = _whole(body.split(b"\n"))
    assert whole is not None and not whole.rejected and whole.lines == 300
    slow = _line_by_line(body)
    assert not slow.rejected and slow.lines == 300
    assert whole.rows.keys() == slow.rows.keys() == {"extension"}
    assert whole.rows["extension"][1] == slow.rows["extension"][1] == 300
    fast_rows, slow_rows = stored(whole.rows["extension"][0]), stored(slow.rows["extension"][0])
    assert fast_rows == slow_rows
    by_id = {r["event_id"]: r for r in fast_rows}
    for e in sent:  # received_at is the line's own, else its sent_at, to the millisecond
        given = e.get("received_at") or e["sent_at"]
        moment = datetime.fromisoformat(given)
        moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        expected = moment.replace(microsecond=moment.microsecond // 1000 * 1000)
        assert by_id[e["event_id"]]["received_at"] == expected


@pytest.mark.parametrize(
    ("change", "reason", "field"),
    [
        ({"received_at": 1790000000}, "invalid_value", "received_at"),
        ({"received_at": "2400-01-01 00:00:00.000"}, "invalid_value", "received_at"),
        ({"query": "private words"}, "forbidden_field", "query"),
        ({"type": "serp_snapshot"}, "missing_field", None),
    ],
)
def test_a_bad_line_sends_the_chunk_line_by_line(
    change: dict[str, Any], reason: str, field: str | None
) -> None:
    good = events(5)
    lines = [orjson.dumps(e) for e in good]
    lines[3] = orjson.dumps({**good[3], **change})
    chunk = prepare_chunk(b"\n".join(lines))
    assert chunk.lines == 5 and chunk.rows["extension"][1] == 4
    (rejection,) = chunk.rejected
    assert rejection.index == 4 and rejection.reason == reason
    if field is not None:
        assert rejection.field == field
    assert b"private words" not in chunk.rows["extension"][0]


def test_crawler_events_are_importable_with_their_received_at() -> None:
    """An autocomplete marker and a SERP snapshot (an export of a crawler study) are stored
    in their families' raw tables, with the received_at they were exported with."""
    marker = {
        "type": "crawl_started",
        "schema_version": 1,
        "event_id": "5b3c2a9e-0000-4000-8000-00000000000a",
        "sent_at": "2026-10-01T08:00:00Z",
        "crawl_id": "ac-1",
        "engine": "google",
        "root": "jeb bush",
        "max_depth": 2,
        "received_at": "2026-10-01 08:00:01.250",
    }
    snapshot = {
        "type": "serp_snapshot",
        "schema_version": 1,
        "event_id": "5b3c2a9e-0000-4000-8000-00000000000b",
        "sent_at": "2026-10-01T08:00:00Z",
        "study_id": "s1",
        "round_id": "s1-r0001",
        "profile_id": "ctl",
        "role": "control",
        "treatment": "",
        "engine": "google",
        "query": "q",
        "results": [{"rank": 1, "type": "organic", "url": "https://a.example/"}],
        "status": "ok",
    }
    chunk = prepare_chunk(b"\n".join([orjson.dumps(marker), orjson.dumps(snapshot), b'{"type": "nope"}']))
    assert chunk.lines == 3 and [(r.index, r.reason) for r in chunk.rejected] == [(3, "unknown_type")]
    assert {name: count for name, (_, count) in chunk.rows.items()} == {"autocomplete": 1, "serp": 1}
    (row,) = stored(chunk.rows["autocomplete"][0])
    assert row["received_at"] == datetime(2026, 10, 1, 8, 0, 1, 250_000, tzinfo=UTC)


def test_one_line_holding_two_events_is_malformed_whatever_the_other_lines() -> None:
    good = events(3)
    two = orjson.dumps(good[0]) + b"," + orjson.dumps(good[1])
    chunk = prepare_chunk(b"\n".join([two, orjson.dumps(good[2])]))
    assert chunk.rows["extension"][1] == 1
    assert [(r.index, r.reason) for r in chunk.rejected] == [(1, "malformed_json")]


def test_an_event_split_over_two_lines_is_malformed_not_read_as_two() -> None:
    """Joined with commas, '{e1},{first half' and 'rest}' parse as two events: a line
    must be one object of its own, as the line-by-line path reads it."""
    good = [orjson.dumps(e) for e in events(2)]
    cut = good[1].index(b',"', len(good[1]) // 2)  # at a comma between fields, the comma dropped
    chunk = prepare_chunk(good[0] + b"," + good[1][:cut] + b"\n" + good[1][cut + 1 :])
    assert "extension" not in chunk.rows
    assert [(r.index, r.reason) for r in chunk.rejected] == [(1, "malformed_json"), (2, "malformed_json")]


@pytest.mark.parametrize(
    "received_at",
    [
        "1700000000",  # a number as text
        "2024-01-01t00:00:00z",
        "20240101T000000Z",
        "2024-W01-1T00:00:00",
        "2024-01-01T00:00:00-00:00:30",
        "2024-01-01 00:00:00.000",
        "2024-01-01T00:00:00+02:00",
        "1969-12-31T23:59:59Z",  # before what the derived tables hold
        "2200-01-01T00:00:00Z",  # after it
        "9999-12-31T23:59:59-23:59",  # past datetime's own range once in UTC (OverflowError)
        "0001-01-01T00:00:00+23:59",
    ],
)
def test_both_paths_take_or_refuse_a_received_at_alike(received_at: str) -> None:
    """The same line is stored the same way whether its chunk goes whole or line by line."""
    (event,) = events(1)
    line = orjson.dumps({**event, "received_at": received_at})
    whole = _whole([line])
    slow = _line_by_line(line)
    if slow.rejected:
        assert whole is None and [(r.reason, r.field) for r in slow.rejected] == [
            ("invalid_value", "received_at")
        ]
    else:
        assert whole is not None
        assert stored(whole.rows["extension"][0]) == stored(slow.rows["extension"][0])


def test_an_event_without_received_at_needs_a_sent_at_the_tables_can_hold() -> None:
    (event,) = events(1)
    line = orjson.dumps({**event, "sent_at": "2200-01-01T00:00:00Z"})
    assert _whole([line]) is None
    chunk = prepare_chunk(line)
    assert chunk.rows == {} and [(r.reason, r.field) for r in chunk.rejected] == [
        ("invalid_value", "received_at")
    ]


@pytest.mark.parametrize("sent_at", ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59"])
def test_a_sent_at_beyond_datetimes_range_in_utc_is_a_rejection_not_an_error(sent_at: str) -> None:
    (event,) = events(1)
    chunk = prepare_chunk(orjson.dumps({**event, "sent_at": sent_at}))
    assert chunk.rows == {} and [(r.reason, r.field) for r in chunk.rejected] == [
        ("invalid_value", "sent_at")
    ]
