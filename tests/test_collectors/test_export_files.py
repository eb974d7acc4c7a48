"""An export's files: raw rows become the events they were, which ``auditstream import``
reads back from JSON lines or Parquet as the same events; result tables keep their types;
the pages of a table are followed to the last."""

from __future__ import annotations

import csv
import datetime as dt
import itertools
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from collectors.export_download import ExportFailed, http_get, pages
from collectors.export_files import (
    EventsWriter,
    NotAnEvent,
    ResultsWriter,
    arrow_type,
    event_of,
    read_events,
)
from collectors.simulate.autocomplete_traffic import AutocompleteSimulation, CrawlConfig
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from schemas.event_types import BY_NAME

RECEIVED = "2026-10-01 08:00:00.350"


def stored(event: dict[str, Any]) -> dict[str, Any]:
    """The row ClickHouse gives back for an event: its timestamps printed without a zone,
    every column of the raw table there (NULL or its default where the type has none)."""
    row = {
        "n_candidates": None,
        "original_rank": None,
        "parent": None,
        "element_type": "",
        "max_depth": 0,
        "study_id": "",
        "received_at": RECEIVED,
    }
    for name, value in event.items():
        if name in ("sent_at", "loaded_at") and value is not None:
            value = value.replace("T", " ").removesuffix("Z")
        row[name] = value
    return row


def snapshot() -> dict[str, Any]:
    return {
        "type": "serp_snapshot",
        "schema_version": 1,
        "event_id": "5b3c2a9e-0000-4000-8000-00000000000b",
        "sent_at": "2026-10-01T08:00:00.000Z",
        "study_id": "s1",
        "round_id": "s1-r0001",
        "profile_id": "ctl",
        "role": "control",
        "treatment": "",
        "engine": "google",
        "query": "q",
        "query_category": "",
        "results": [{"rank": 1, "type": "organic", "url": "https://a.example/"}],
        "result_estimate": 18_446_744_073_709_551_615,
        "status": "ok",
        "raw_ref": "",
        "coverage": 0.5,
        "consent": "accepted",
        "loaded_at": "2026-10-01T08:00:00.120Z",
    }


def canonical(event: dict[str, Any]) -> dict[str, Any]:
    model = BY_NAME[event["type"]].model
    return {**model.model_validate(event).model_dump(mode="json"), "received_at": RECEIVED}


def families() -> dict[str, list[dict[str, Any]]]:
    traffic = ExtensionTraffic(TrafficConfig(experiment_id="x", seed=2, installs=5))
    crawl = AutocompleteSimulation(CrawlConfig(roots=("jeb bush",), study="ac", seed=1)).crawl_round(0)
    return {
        "extension": list(itertools.islice(traffic.events(), 40)),
        "autocomplete": list(crawl),
        "serp": [snapshot()],
    }


def test_a_raw_row_is_the_event_it_was_with_its_received_at() -> None:
    for events in families().values():
        for event in events:
            assert event_of(stored(event)) == canonical(event)


def test_an_empty_column_a_type_has_a_default_for_is_that_default() -> None:
    """A SERP snapshot stored before migration 0025 has consent '' (the column's default)."""
    old = stored({**snapshot(), "consent": ""})
    assert event_of(old)["consent"] == "none"
    with pytest.raises(NotAnEvent, match="status"):
        event_of({**old, "status": "fine"})
    with pytest.raises(NotAnEvent, match="unknown type"):
        event_of({**old, "type": "nope"})


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".parquet"])
def test_what_is_written_the_import_reads_back_as_the_same_events(tmp_path: Path, suffix: str) -> None:
    for family, events in families().items():
        rows = [stored(e) for e in events]
        columns = sorted({c for r in rows for c in r})
        path = tmp_path / f"{family}{suffix}"
        writer = EventsWriter(path, family)
        half = len(rows) // 2
        for page in (rows[:half], rows[half:], []):  # pages, an empty last one too
            writer.write(columns, [[r.get(c) for c in columns] for r in page])
        broken = {**rows[0], "type": "nope"}
        writer.write(columns, [[broken.get(c) for c in columns]])
        writer.close()
        assert writer.rows == len(events) and len(writer.refused) == 1
        back = list(read_events(path))
        assert [canonical_read(e) for e in back] == [canonical(e) for e in events], family


def canonical_read(event: dict[str, Any]) -> dict[str, Any]:
    """As the import validates a line: absent (Parquet's null) is the model's default."""
    received = event.pop("received_at")
    return {
        **BY_NAME[event["type"]].model.model_validate(event).model_dump(mode="json"),
        "received_at": received,
    }


def test_result_tables_keep_their_types_in_parquet_and_are_plain_in_csv(tmp_path: Path) -> None:
    columns = ["engine", "window_start", "day", "computed_at", "clicks", "share", "nmi", "links"]
    types = ["LowCardinality(String)", "DateTime('UTC')", "Date", "DateTime64(6, 'UTC')", "Array(UInt64)",
             "Float64", "Nullable(Float64)", "Map(String, UInt64)"]  # fmt: skip
    rows = [
        [
            "google",
            "2026-10-01 08:01:00",
            "2026-10-01",
            "2026-10-01 09:00:00.123456",
            [1, 2],
            0.25,
            None,
            {"a": 1},
        ],
        ["bing", "2026-10-01 08:02:00", "2026-10-02", "2026-10-01 09:00:00.000001", [], 1.0, 0.5, {}],
    ]
    parquet, text = tmp_path / "t.parquet", tmp_path / "t.csv"
    for path in (parquet, text):
        writer = ResultsWriter(path, columns, types)
        writer.write(columns, rows[:1])
        writer.write(columns, rows[1:])
        writer.close()
    table = pq.read_table(parquet)
    assert table.num_rows == 2 and pq.ParquetFile(parquet).num_row_groups == 2
    first = table.to_pylist()[0]
    assert first["window_start"] == dt.datetime(2026, 10, 1, 8, 1, tzinfo=dt.UTC)
    assert first["day"] == dt.date(2026, 10, 1) and first["clicks"] == [1, 2] and first["nmi"] is None
    assert first["computed_at"].microsecond == 123456 and first["links"] == '{"a":1}'
    with text.open() as handle:
        read = list(csv.reader(handle))
    assert read[0] == columns and read[1][4] == "[1,2]" and read[1][6] == "" and read[2][6] == "0.5"
    with pytest.raises(ValueError, match="columns changed"):
        ResultsWriter(tmp_path / "u.csv", columns, types).write(columns[::-1], rows)


@pytest.mark.parametrize(
    ("clickhouse", "arrow"),
    [
        ("UInt8", "uint8"),
        ("Int16", "int16"),
        ("Nullable(UInt64)", "uint64"),
        ("LowCardinality(Nullable(String))", "string"),
        ("UUID", "string"),
        ("FixedString(64)", "string"),
        ("Bool", "bool"),
        ("Array(Array(Float32))", "list<item: list<item: float>>"),
        ("DateTime64(3, 'UTC')", "timestamp[ms, tz=UTC]"),
        (
            "Array(Tuple(\n    rank UInt16,\n    type String))",
            "list<item: struct<rank: uint16, type: string>>",
        ),
        ("Tuple(UInt8, String)", "string"),
    ],
)
def test_clickhouse_types_map_to_arrow(clickhouse: str, arrow: str) -> None:
    assert str(arrow_type(clickhouse)) == arrow


def test_the_pages_of_a_table_are_followed_to_the_last() -> None:
    asked: list[tuple[str, dict[str, str]]] = []
    answers = iter(
        [{"rows": [[1]], "next": '["a", 1]'}, {"rows": [[2]], "next": '["b", 2]'}, {"rows": [], "next": None}]
    )

    def get(path: str, query: dict[str, str]) -> Any:
        asked.append((path, query))
        return next(answers)

    got = [p["rows"] for p in pages(get, "autocomplete", "autocomplete_events", "", 1)]
    assert got == [[[1]], [[2]], []]
    assert [q.get("after") for _, q in asked] == [None, '["a", 1]', '["b", 2]']
    assert asked[0] == ("/v1/export/autocomplete/autocomplete_events", {"study": "", "limit": "1"})


def test_a_page_the_service_cannot_answer_yet_is_asked_again_and_a_refusal_is_said() -> None:
    """503 with Retry-After, then the answer; a 404 is the service's message; a port where
    nothing listens fails at once, not after minutes of retries."""
    import http.server
    import threading

    answers = iter([(503, b'{"error": "store_busy", "message": "busy"}'), (200, b'{"ok": 1}'),
                    (404, b'{"error": "unknown_export", "message": "no such table"}')])  # fmt: skip
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path + " " + self.headers["Authorization"])
            status, body = next(answers)
            self.send_response(status)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        get = http_get(f"http://127.0.0.1:{server.server_port}", "k1")
        assert get("/v1/export/autocomplete", {"study": "a b"}) == {"ok": 1}
        assert seen == ["/v1/export/autocomplete?study=a+b Bearer k1"] * 2
        with pytest.raises(ExportFailed, match="404: no such table"):
            get("/v1/export/autocomplete/x", {})
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(ExportFailed, match="is `auditstream up` running"):
        http_get(f"http://127.0.0.1:{server.server_port}", "k1")("/v1/export/autocomplete", {})
