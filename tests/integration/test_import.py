"""``auditstream import``: a study's export comes in once, exactly, with every derived
table equal to a recount, and importing it again changes nothing."""

from __future__ import annotations

import gzip
import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from tests.helpers import Service, http, wait_for
from tests.integration.test_end_to_end import (
    assert_aggregate_exact,
    assert_hourly_replicates_exact,
    assert_install_stats_exact,
    assert_study_install_rows_exact,
)

pytestmark = pytest.mark.integration

EXP = "imported"
DERIVED = {
    "raw_extension_events": "count(), uniqExact(event_id)",
    "extension_events": "count()",
    "clicks_by_rank_1m": "sum(units), sum(impressions), sum(clicks)",
    "arrangement_install_day": "count(), sum(units), sum(impressions), sum(arraySum(clicks))",
    "arrangement_install": "count(), sum(units), sum(impressions), sum(arraySum(clicks)), sum(clicks_ad)",
    "agg_arrangement_10s": "count()",
    "arrangement_replicates_1h": "count(), sum(units), sum(installs_units), sum(arraySum(rep_clicks))",
}


def study_events(n: int) -> list[dict[str, Any]]:
    """``n`` events spread over three past days; half carry the received_at of an export."""
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=EXP, seed=17, installs=60))
    start = datetime(2026, 10, 1, 8, tzinfo=UTC)
    out = []
    for i, event in enumerate(itertools.islice(traffic.events(), n)):
        moment = start + timedelta(seconds=i * 259_200 // n)
        event["sent_at"] = moment.isoformat(timespec="milliseconds")
        if i % 2:
            event["received_at"] = (moment + timedelta(milliseconds=350)).strftime("%Y-%m-%d %H:%M:%S.%f")[
                :-3
            ]
        out.append(event)
    return out


def run_import(svc: Service, *files: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app, ["import", *files, "--url", svc.url, "--api-key", svc.api_key, "--chunk-lines", "1500"]
    )
    return result.exit_code, result.output


def snapshot(svc: Service) -> dict[str, Any]:
    return {
        table: svc.sql(f"SELECT {columns} FROM {table} WHERE experiment_id = '{EXP}'")
        for table, columns in DERIVED.items()
    }


def test_import_stores_once_and_a_reimport_changes_nothing(service: Service, tmp_path: Path) -> None:
    events = study_events(6000)
    jsonl, gz, parquet = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz", tmp_path / "c.parquet"
    bad = [
        b"{not json",
        orjson.dumps({**events[0], "event_id": "5b3c2a9e-0000-4000-8000-000000000001", "query": "secret"}),
        orjson.dumps({**events[1], "event_id": "5b3c2a9e-0000-4000-8000-000000000002", "type": "nope"}),
        orjson.dumps({**events[2], "event_id": "5b3c2a9e-0000-4000-8000-000000000003", "received_at": "x"}),
    ]
    jsonl.write_bytes(b"\n".join([*(orjson.dumps(e) for e in events[:2500]), *bad]) + b"\n")
    gz.write_bytes(gzip.compress(b"\n".join(orjson.dumps(e) for e in events[2500:4500])))
    rows = [{k: v for k, v in e.items()} for e in events[4500:]]
    pq.write_table(pa.Table.from_pylist(rows), parquet)

    code, output = run_import(service, str(jsonl), str(gz), str(parquet))
    assert code == 0, output
    assert (
        "6,000" in output and "rejected: forbidden_field" in output and "rejected: malformed_json" in output
    )
    assert "secret" not in output  # a refused value is never echoed
    assert service.scalar(f"SELECT count() FROM extension_events WHERE experiment_id = '{EXP}'") == 6000
    assert (
        service.scalar(
            f"SELECT count() FROM extension_events WHERE experiment_id = '{EXP}' "
            "AND toDate(received_at) BETWEEN '2026-10-01' AND '2026-10-04'"
        )
        == 6000
    )
    assert_aggregate_exact(service, EXP)
    assert_install_stats_exact(service, EXP)  # also the study-wide rows
    assert_study_install_rows_exact(service, EXP)
    assert_hourly_replicates_exact(service, EXP)
    before = snapshot(service)

    code, output = run_import(service, str(jsonl), str(gz), str(parquet))
    assert code == 0, output
    assert "already stored" in output
    assert snapshot(service) == before
    assert before["raw_extension_events"][0] == {"count()": 6000, "uniqExact(event_id)": 6000}


def test_import_refuses_what_it_cannot_take(service: Service) -> None:
    def post(path: str, body: bytes, content_type: str, key: str | None = None) -> Any:
        headers = {"Content-Type": content_type, "Authorization": f"Bearer {key or service.api_key}"}
        return http("POST", service.url + path, body, headers)

    assert post("/v1/import", b"{}", "application/json").status == 415
    assert post("/v1/import", b"{}", "application/x-ndjson", key="not-a-key").status == 401
    bad_span = post("/v1/import/recompute", b'{"spans": [{"experiment_id": 1}]}', "application/json")
    assert bad_span.status == 400 and bad_span.body["error"] == "bad_request"
    midday = post("/v1/import/recompute", b'{"spans": [{"experiment_id": "e", "engine": "g", '
                  b'"day_start": 43200}]}', "application/json")  # fmt: skip
    assert midday.status == 400
    for day in (-86400, 2**32, 10**17):  # outside what the slices' DateTime holds
        far = post("/v1/import/recompute", orjson.dumps({"spans": [{"experiment_id": "e", "engine": "g",
                   "day_start": day}]}), "application/json")  # fmt: skip
        assert far.status == 400 and far.body["error"] == "bad_request", day
    many = [{"experiment_id": "e", "engine": "g", "day_start": 86400 * i} for i in range(1001)]
    assert post("/v1/import/recompute", orjson.dumps({"spans": many}), "application/json").status == 400
    crawler = orjson.dumps({"type": "crawl_started", "event_id": "x"})
    answer = post("/v1/import", crawler + b"\n[1]", "application/x-ndjson")
    assert answer.status == 200 and answer.body["accepted"] == 0
    assert set(answer.body["rejected_by_reason"]) <= {"missing_field", "not_an_object", "invalid_value"}


def test_an_event_is_stored_once_however_far_its_copies_lie_within_the_horizon(
    service: Service, tmp_path: Path
) -> None:
    """A live event from a client whose clock was 3 h behind, imported later without its
    received_at (so stamped with its sent_at), and one id twice in a file two days apart:
    each stored once (the lookup looked an hour each way and stored both)."""
    from tests.helpers import wait_for

    exp = "imported-skew"
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=exp, seed=3, installs=5))
    live, twice = itertools.islice(traffic.events(), 2)
    live["sent_at"] = (datetime.now(UTC) - timedelta(hours=3)).isoformat(timespec="milliseconds")
    assert service.post([live]).status == 202

    def stored(event_id: str) -> int:
        return int(service.scalar(f"SELECT count() FROM raw_extension_events WHERE event_id = '{event_id}'"))

    wait_for(lambda: stored(live["event_id"]) == 1, 60, "the live event to be stored")
    day = datetime(2026, 10, 1, 8, tzinfo=UTC)
    first = {**twice, "sent_at": day.isoformat(timespec="milliseconds")}
    again = {**twice, "received_at": (day + timedelta(days=2)).strftime("%Y-%m-%d %H:%M:%S.000")}
    path = tmp_path / "skew.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(e) for e in (live, first, again)))
    result = CliRunner().invoke(  # a chunk a line: the two copies of `twice` in two chunks
        app, ["import", str(path), "--url", service.url, "--api-key", service.api_key, "--chunk-lines", "1"]
    )
    assert result.exit_code == 0, result.output
    assert stored(live["event_id"]) == 1 and stored(twice["event_id"]) == 1
    assert_aggregate_exact(service, exp)


def test_a_file_that_breaks_part_way_leaves_no_table_behind_its_raw_rows(
    service: Service, tmp_path: Path
) -> None:
    """An over-long line is a rejection, not the end of the import; a gzip cut short ends it
    with a clear error, and the events stored before the cut are counted in every table."""
    exp = "imported-broken"
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=exp, seed=23, installs=40))
    start = datetime(2026, 10, 5, 8, tzinfo=UTC)
    events = []
    for i, event in enumerate(itertools.islice(traffic.events(), 4000)):
        event["sent_at"] = (start + timedelta(seconds=40 * i)).isoformat(timespec="milliseconds")
        events.append(event)
    lines = [orjson.dumps(e) for e in events]

    long_line = tmp_path / "long.jsonl"  # with a BOM, as some editors save: the first line counts
    long_line.write_bytes(
        b"\xef\xbb\xbf"
        + b"\n".join([*lines[:1000], b'{"x": "' + b"y" * 2_000_000 + b'"}', *lines[1000:2000]])
    )
    code, output = run_import(service, str(long_line))
    assert code == 0, output
    assert "rejected: line_too_long" in output and "line 1001: line_too_long" in output
    assert service.scalar(f"SELECT count() FROM extension_events WHERE experiment_id = '{exp}'") == 2000

    cut = tmp_path / "cut.jsonl.gz"
    whole = gzip.compress(b"\n".join(lines[2000:]), mtime=0)
    cut.write_bytes(whole[: len(whole) * 3 // 4])
    code, output = run_import(service, str(cut))
    assert code == 1 and "is not a whole gzip file" in output, output
    stored = service.scalar(f"SELECT count() FROM extension_events WHERE experiment_id = '{exp}'")
    assert 2000 < stored < 4000  # the chunks before the cut
    assert_aggregate_exact(service, exp)  # and every table counts them
    assert_install_stats_exact(service, exp)
    assert_study_install_rows_exact(service, exp)


def test_events_imported_while_they_arrive_live_are_stored_once(service: Service) -> None:
    """The same events sent through /v1/events and /v1/import at the same moment, from
    several clients: each is stored once (an outside probe stored 4,800 rows for 4,000 ids
    when the worker's lookup and insert were two steps an import could slip between)."""
    import uuid
    from concurrent.futures import ThreadPoolExecutor

    traffic = ExtensionTraffic(TrafficConfig(experiment_id="raced", seed=23, installs=40))
    headers = {"Authorization": f"Bearer {service.api_key}"}
    sent: list[str] = []
    for _ in range(10):  # the old code stored copies in about one run of four like this
        batch = [{**e, "event_id": str(uuid.uuid4())} for e in itertools.islice(traffic.events(), 400)]
        sent += [e["event_id"] for e in batch]
        body = orjson.dumps(batch)
        lines = b"\n".join(orjson.dumps(e) for e in batch)

        def live(_: int, body: bytes = body) -> int:
            kind = {**headers, "Content-Type": "application/json"}
            return http("POST", service.url + "/v1/events", body, kind).status

        def imported(_: int, lines: bytes = lines) -> int:
            kind = {**headers, "Content-Type": "application/x-ndjson"}
            return http("POST", service.url + "/v1/import", lines, kind).status

        with ThreadPoolExecutor(5) as pool:
            futures = [pool.submit(live, i) for i in range(3)] + [pool.submit(imported, i) for i in range(2)]
            statuses = [f.result() for f in futures]
        assert statuses == [202, 202, 202, 200, 200]
    stored = "SELECT count(), uniqExact(event_id) FROM raw_extension_events WHERE experiment_id = 'raced'"
    wait_for(lambda: service.sql(stored)[0]["uniqExact(event_id)"] == len(sent), 120, "every event stored")
    (counts,) = service.sql(stored)
    assert counts["count()"] == counts["uniqExact(event_id)"] == len(sent)
