"""On a ClickHouse cluster the service's own mutations go to the shards' local tables.

A ``Distributed`` table takes no ``DELETE`` or ``OPTIMIZE``. With
``AUDITSTREAM_CLICKHOUSE_CLUSTER`` set, the server store sends each statement through
``schemas.cluster_ddl.runtime_statements``. Here a server store over chDB
(tests/chdb_driver.py) records those cluster forms while running the single-server
statements: it settles two writers' copies, imports a chunk and erases an install.
Every mutation it sent must name a ``_local`` table ``ON CLUSTER`` (or a table replicated
everywhere), and chDB's parser must read each one. There is no cluster here to run them on.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import orjson

from core.store.server_store import ServerStore
from schemas.cluster_ddl import LAYOUT, Everywhere, runtime_statements
from schemas.topics import EXTENSION
from streams.bulk_import import BulkImporter
from streams.erasure import Eraser
from streams.sinks.later_copies import delete_later_copies
from tests.chdb_driver import ChdbDriverClient
from tests.test_schemas.test_cluster_ddl import parsed
from tests.test_streams.test_several_writers import EVENTS, LIVE_AT, at

CLUSTER = "auditstream"
MUTATION = re.compile(r"(?:DELETE\s+FROM|OPTIMIZE\s+TABLE|ALTER\s+TABLE|TRUNCATE\s+TABLE)\s+(\w+)", re.I)


def test_what_is_no_mutation_of_a_laid_out_table_is_sent_as_it_is() -> None:
    for sql in (
        "CREATE TABLE import_staging_1 AS raw_extension_events ENGINE = Memory",
        "INSERT INTO raw_extension_events SELECT * FROM import_new_1",
        "DROP TABLE IF EXISTS import_new_1",
        "SELECT count() FROM raw_extension_events",
        "DELETE FROM import_new_1 WHERE 1",
    ):
        assert runtime_statements(sql, CLUSTER) == [sql]
    assert runtime_statements("OPTIMIZE TABLE agg_arrangement_install FINAL", CLUSTER) == [
        "OPTIMIZE TABLE agg_arrangement_install_local ON CLUSTER 'auditstream' FINAL"
    ]


async def test_every_mutation_the_service_sends_has_a_cluster_form_that_parses(path: Path) -> None:
    sent: list[str] = []

    def recorded(sql: str) -> list[str]:
        sent.extend(runtime_statements(sql, CLUSTER))
        return [sql]  # chDB runs the single-server form

    store = ServerStore(
        "clickhouse://w@h/db", read_lanes=1, connect=lambda _: ChdbDriverClient(path), statements=recorded
    )

    async def no_looks(experiment_id: str, engine: str) -> None:
        return None

    events = EVENTS[:20]
    try:
        # two writers' copies of one event, settled
        copies = [at(events[0], LIVE_AT), at(events[0], LIVE_AT + timedelta(hours=1))]
        await store.insert_json_rows("raw_extension_events", b"\n".join(map(orjson.dumps, copies)))
        ids = f"'{events[0]['event_id']}'"
        deleted = await delete_later_copies(store, "raw_extension_events", "1", [ids])
        assert len(deleted) == 1
        # an import of a chunk, its days recomputed (OPTIMIZE of the derived tables)
        chunk = [at(e, LIVE_AT + timedelta(seconds=n)) for n, e in enumerate(events)]
        importer = BulkImporter(store)
        written = await importer.write(EXTENSION, b"\n".join(map(orjson.dumps, chunk)), len(chunk))
        for span in sorted(written.spans):
            await importer.recompute_day(span)
        for experiment_id, engine in sorted({(s.experiment_id, s.engine) for s in written.spans}):
            await importer.recompute_installs(experiment_id, engine)
        # an install erased
        await Eraser(store, no_looks, settle_s=0).erase(events[1]["install_id"], "operator")
    finally:
        await store.close()
    mutations = [s for s in sent if MUTATION.match(s.strip())]
    kinds = {MUTATION.match(s.strip()).group(0).split()[0].upper() for s in mutations}  # type: ignore[union-attr]
    assert {"DELETE", "OPTIMIZE"} <= kinds
    for statement in mutations:
        table = MUTATION.match(statement.strip()).group(1)  # type: ignore[union-attr]
        if table.endswith("_local"):
            assert f"ON CLUSTER '{CLUSTER}'" in statement, statement[:200]
            assert isinstance(LAYOUT[table.removesuffix("_local")], type(LAYOUT["raw_extension_events"]))
        else:  # a table replicated on every node: replication carries the mutation
            assert isinstance(LAYOUT.get(table), Everywhere), statement[:200]
    results = parsed(tuple(mutations))
    errors = [f"{r['error']}\n{s[:300]}" for s, r in zip(mutations, results, strict=True) if r["error"]]
    assert not errors, "\n\n".join(errors)
