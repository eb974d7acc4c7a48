"""The server store's native insert (core/store/native_rows.py): JSON rows as typed columns.

The pure part is tested on its own; then the same rows go into twin chDB tables, once as
JSON (the embedded store's insert) and once as the typed columns the server store hands
clickhouse-driver (tests/chdb_driver.py), and the tables must hold the same rows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from core.store.base import StoreError
from core.store.chdb_store import ChdbStore
from core.store.native_rows import Column, converter, to_columns, zero
from core.store.server_store import ServerStore
from schemas.migrate import migrate
from tests.chdb_driver import ChdbDriverClient


def test_values_become_the_python_types_the_driver_writes() -> None:
    assert converter("DateTime64(3, 'UTC')")("2026-11-29T09:00:07.232Z") == datetime(
        2026, 11, 29, 9, 0, 7, 232000, tzinfo=UTC
    )
    assert converter("DateTime64(3, 'UTC')")("2026-11-29 09:00:07.232") == datetime(
        2026, 11, 29, 9, 0, 7, 232000, tzinfo=UTC
    )
    assert converter("Date")("2026-10-06") == date(2026, 10, 6)
    assert converter("LowCardinality(Nullable(String))")(None) is None
    assert converter("Array(Tuple(rank UInt8, text String, self_loop Bool, type String))")(
        [{"rank": 1, "text": "a", "self_loop": False, "type": "q"}, [2, "b", True, "q"]]
    ) == [(1, "a", False, "q"), (2, "b", True, "q")]
    assert converter("Map(String, UInt64)")({"a": 1}) == {"a": 1}
    assert converter("UInt64")("18446744073709551615") == 2**64 - 1
    assert converter("String")(5) == "5" and converter("String")(True) == "true"
    assert zero("Tuple(a UInt8, b String)") == (0, "") and zero("Nullable(UInt8)") is None


def test_an_omitted_key_takes_the_columns_default_and_a_bad_value_names_row_and_column() -> None:
    columns = [
        Column("id", "UInt32"),
        Column("label", "String", "DEFAULT", "'trimmed'"),
        Column("score", "Float64", "DEFAULT", "nan"),
        Column("stored_at", "DateTime64(3, 'UTC')", "DEFAULT", "now64(3)"),
        Column("tags", "Array(String)"),
    ]
    (names, values), *rest = to_columns(
        columns, [{"id": 1, "label": "x", "extra": 1}, {"id": 2, "score": 0.5}]
    )
    assert not rest and names == ["id", "label", "score"]  # unknown keys and unnamed columns left out
    assert values[:2] == [[1, 2], ["x", "trimmed"]] and math.isnan(values[2][0])
    # a column only the server can fill: rows that name it and rows that do not apart
    split = to_columns(columns, [{"id": 1}, {"id": 2, "stored_at": "2026-01-01 00:00:00"}])
    assert sorted(n for n, _ in split) == [["id"], ["id", "stored_at"]]
    with pytest.raises(ValueError, match=r"row 2, column id \(UInt32\)"):
        to_columns(columns, [{"id": 1}, {"id": [1]}])


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[tuple[ChdbStore, ServerStore]]:
    path = tmp_path / "ch"
    store = ChdbStore(path, read_lanes=1)
    await migrate(store)
    server = ServerStore("clickhouse://w@h/db", read_lanes=1, connect=lambda _: ChdbDriverClient(path))
    try:
        yield store, server
    finally:
        await server.close()
        await store.close()


def sample_rows() -> dict[str, list[dict[str, Any]]]:
    traffic = ExtensionTraffic(TrafficConfig(experiment_id="native", installs=5, seed=7))
    extension = [
        {**e, "received_at": f"2026-11-20 10:00:{n:02d}.{n:03d}"}
        for n, e in enumerate(itertools.islice(traffic.events(), 50))
    ]
    node = {
        "event_id": "6f1c1e6a-9a55-4c55-9a3b-2d3f1f0e8a01",
        "type": "autocomplete_node",
        "schema_version": 1,
        "sent_at": "2026-11-20T10:00:00.100Z",
        "received_at": "2026-11-20 10:00:00.200",
        "crawl_id": "c1",
        "engine": "google",
        "root": "donald trump",
        "query": "donald trump a",
        "parent": None,
        "depth": 1,
        "suggestions": [{"rank": 1, "text": "donald trump age", "self_loop": False, "type": "query"}],
        "status": "ok",
        "raw_ref": "",
    }
    marker = {
        "event_id": "6f1c1e6a-9a55-4c55-9a3b-2d3f1f0e8a02",
        "type": "crawl_completed",
        "schema_version": 1,
        "sent_at": "2026-11-20T10:05:00Z",
        "received_at": "2026-11-20 10:05:00.000",
        "crawl_id": "c1",
        "engine": "google",
        "root": "donald trump",
        "n_nodes": 12,
    }
    snapshot = {
        "event_id": "6f1c1e6a-9a55-4c55-9a3b-2d3f1f0e8a03",
        "type": "serp_snapshot",
        "schema_version": 1,
        "sent_at": "2026-11-20T10:00:00.100+01:00",
        "received_at": "2026-11-20 09:00:00.900",
        "study_id": "s1",
        "round_id": "r1",
        "profile_id": "p1",
        "role": "treatment",
        "treatment": "gender",
        "engine": "google",
        "query": 'it\'s \\ "quoted"\n',
        "query_category": "news",
        "results": [{"rank": 1, "type": "organic", "url": "https://example.org/ü"}],
        "result_estimate": None,
        "status": "ok",
        "raw_ref": "",
    }
    profile = {  # what an extension without an erasure key sends: a null in a String column
        "event_id": "6f1c1e6a-9a55-4c55-9a3b-2d3f1f0e8a04",
        "type": "install_profile",
        "schema_version": 1,
        "sent_at": "2026-11-20T10:00:00.100Z",
        "received_at": "2026-11-20 10:00:00.300",
        "install_id": "10d3af43cea155d12389",
        "install_day": "2026-10-06",
        "extension_version": "1.5.0",
        "experiment_id": "native",
        "consent": "granted",
        "age_band": None,
        "search_languages": ["de", "en"],
        "country": "DE",
        "search_frequency": None,
        "erasure_key_sha256": None,
    }
    dead = {"topic": "extension", "reason": "refused", "payload": '{"x": 1}'}
    return {
        "raw_extension_events": extension,
        "raw_autocomplete_events": [node, marker],
        "raw_serp_snapshots": [snapshot],
        "raw_install_profiles": [profile],
        "dead_letters": [dead],
    }


async def test_the_native_insert_stores_what_the_json_insert_stores(
    stores: tuple[ChdbStore, ServerStore],
) -> None:
    store, server = stores
    for table, rows in sample_rows().items():
        twin = f"{table}_native"
        await store.execute(f"CREATE TABLE {twin} AS {table}")
        lines = b"\n".join(orjson.dumps(r) for r in rows)
        await store.insert_json_rows(table, lines)
        await server.insert_json_rows(twin, lines)
        columns = "* EXCEPT (stored_at)" if table == "dead_letters" else "*"
        want = await store.query(f"SELECT {columns} FROM {table} ORDER BY tuple(*)")
        got = await store.query(f"SELECT {columns} FROM {twin} ORDER BY tuple(*)")
        assert len(got.rows) == len(rows) and got.rows == want.rows, table


async def test_a_row_the_native_insert_cannot_type_is_refused_as_clickhouse_would(
    stores: tuple[ChdbStore, ServerStore],
) -> None:
    _, server = stores
    with pytest.raises(StoreError, match="row 1, column depth"):
        await server.insert_json_rows("raw_autocomplete_events", b'{"event_id": "x", "depth": "deep"}')
    with pytest.raises(StoreError, match="not a JSON object"):
        await server.insert_json_rows("raw_autocomplete_events", b"[1]")
