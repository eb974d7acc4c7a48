"""The import's canonical path: it takes only canonical chunks, and writes exactly the rows
the models' own whole-chunk path writes."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from ingest.import_chunks import _canonical, _whole, prepare_chunk
from schemas.events import utc_text


def canonical_events(n: int) -> list[dict[str, Any]]:
    """Events as an export writes them: received_at absent, in the wire form, or ISO Z."""
    traffic = ExtensionTraffic(TrafficConfig(experiment_id="imp", seed=5, installs=20))
    start = datetime(2026, 10, 1, 8, tzinfo=UTC)
    out = []
    for i, event in enumerate(itertools.islice(traffic.events(), n)):
        moment = start + timedelta(seconds=37 * i, milliseconds=123)
        event["sent_at"] = utc_text(moment)
        received = moment + timedelta(milliseconds=250)
        if i % 3 == 1:
            event["received_at"] = received.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        elif i % 3 == 2:
            event["received_at"] = utc_text(received)
        out.append(event)
    return out


def lines_of(events: list[dict[str, Any]]) -> list[bytes]:
    return [orjson.dumps(e) for e in events]


def test_a_canonical_chunk_gives_byte_for_byte_the_rows_of_the_models_path() -> None:
    lines = lines_of(canonical_events(300))
    fast, whole = _canonical(lines), _whole(lines)
    assert fast is not None and whole is not None
    assert fast.rows == whole.rows and fast.lines == whole.lines == 300
    assert prepare_chunk(b"\n".join(lines)).rows == whole.rows


@pytest.mark.parametrize(
    "change",
    [
        {"sent_at": "2026-10-01T08:00:00.123+00:00"},  # an offset: the models' way rewrites it
        {"sent_at": "2026-10-01T08:00:00Z"},  # no milliseconds
        {"received_at": "2026-10-01T08:00:00.123"},  # ISO without a zone
        {"received_at": "2026-02-29 08:00:00.123"},  # a day that does not exist
        {"received_at": "1969-12-31T23:59:59.999Z"},  # before the derived tables
        {"received_at": "2106-02-07T00:00:00.000Z"},  # after them
        {"sent_at": "2200-01-01T00:00:00.000Z", "received_at": None},  # so from a sent_at out of range
        {"event_id": "5B3C2A9E-0000-4000-8000-00000000000A"},  # uppercase
        {"received_at": 1790000000},
    ],
)
def test_anything_not_canonical_goes_the_models_way_with_the_same_answer(change: dict[str, Any]) -> None:
    events = canonical_events(4)
    events[2] = {**events[2], **change}
    lines = lines_of(events)
    assert _canonical(lines) is None
    chunk, whole = prepare_chunk(b"\n".join(lines)), _whole(lines)
    if whole is not None:
        assert chunk.rows == whole.rows and not chunk.rejected
    else:
        assert [r.index for r in chunk.rejected] == [3]


def test_the_range_edges_are_those_of_the_models_way() -> None:
    (event,) = canonical_events(1)
    for received in ("1970-01-01T00:00:00.000Z", "2106-02-06T23:59:59.999Z", "2106-02-06 23:59:59.999"):
        line = orjson.dumps({**event, "received_at": received})
        fast, whole = _canonical([line]), _whole([line])
        assert fast is not None and whole is not None and fast.rows == whole.rows
