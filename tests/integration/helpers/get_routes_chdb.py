"""Every GET route of the service, called over a fresh chDB holding a study, writes nothing
(run by test_get_never_writes.py as ``python -m``: chDB allows one session per process).

A study is stored and recomputed as an import does; then every table's row count and
content hash is taken, every GET route is called (the board's experiment panel with both
kinds of interval, the reports' read paths with it), and the hashes are taken again. The
store also notes every write statement sent while the routes ran. Then the worker's step
(``keep_looks``) stores the decision line's looks, once. Prints JSON.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from collectors.simulate.extension_traffic import TrafficConfig
from core.settings import Settings
from core.store.chdb_store import ChdbStore
from ingest.api_keys import SCOPES, KeyFile
from ingest.app import create_app
from schemas.migrate import migrate
from studies.arrangement.write.looks import keep_looks
from tests.integration.helpers.chdb_study import print_run, store_study

EXP = "get-only"
DAYS = 4
PARAMS = {"experiment_id": EXP, "study_id": "none", "recompute_id": "rc_" + "0" * 20, "name": "board.js"}
PARAMS |= {"paper": "personalization", "figure": "figure5_by_rank"}  # the study's statements, drawn
PARAMS |= {"kind": "arrangement", "table": "arrangement_install"}  # an export's manifest and a page
QUERIES = {
    "/v1/board/experiments/{experiment_id}": [
        "",
        "?intervals=bootstrap",
        "?intervals=sequential",
        "?correction=bh&variance_reduction=1",
    ],
    "/v1/board/autocomplete": ["?study=none&engine=google"],
    "/v1/board/figures/{paper}/{figure}": ["?study=none"],
    "/v1/export/{kind}": [f"?study={EXP}"],
    "/v1/export/{kind}/{table}": [f"?study={EXP}&limit=50"],
}


class WriteNotingStore(ChdbStore):
    """A chDB store that notes every statement that may write, once ``noting`` is set."""

    noting = False
    writes: list[str]

    async def execute(self, sql: str, *, background: bool = False) -> None:
        if self.noting:
            self.writes.append(re.sub(r"\s+", " ", sql)[:200])
        await super().execute(sql, background=background)

    async def insert_json_rows(self, table: str, lines: bytes, *, background: bool = False) -> None:
        if self.noting:
            self.writes.append(f"insert into {table}")
        await super().insert_json_rows(table, lines, background=background)


async def table_hashes(store: ChdbStore) -> dict[str, list[Any]]:
    tables = await store.query(
        "SELECT name FROM system.tables WHERE database = currentDatabase() "
        "AND engine NOT IN ('View', 'MaterializedView') ORDER BY name"
    )
    out = {}
    for (name,) in tables.rows:
        found = await store.query(f"SELECT count(), sum(cityHash64(*)) FROM {name}")
        out[str(name)] = [int(found.rows[0][0]), str(found.rows[0][1])]
    return out


async def run(folder: Path, events: int) -> dict[str, Any]:
    store = WriteNotingStore(folder)
    store.writes = []
    await migrate(store)
    start = datetime.now(UTC).replace(hour=5, minute=0, second=0, microsecond=0) - timedelta(days=DAYS)
    await store_study(store, TrafficConfig(experiment_id=EXP, seed=3, installs=200), start, DAYS, events)

    settings = Settings(data_dir=folder.parent / "service", kafka_bootstrap="127.0.0.1:9")
    _, key = KeyFile(settings.resolved_keys_file).create("all", tuple(SCOPES))
    client = TestClient(TestServer(create_app(settings, store)))
    await client.start_server()
    try:
        routes = sorted(
            {r.resource.canonical for r in client.app.router.routes() if r.method == "GET" and r.resource}
        )
        before = await table_hashes(store)
        store.noting = True
        answered = {}
        for route in routes:
            for query in QUERIES.get(route, [""]):
                url = route.format(**{k: v for k, v in PARAMS.items() if "{" + k + "}" in route}) + query
                response = await client.get(url, headers={"Authorization": f"Bearer {key}"})
                await response.read()
                answered[url] = response.status
        store.noting = False
        after = await table_hashes(store)
        # the worker's step stores what the reads computed in memory, once
        now = time.time()  # one clock for both: 01:00 UTC passing between them adds a day
        kept = [await keep_looks(store, now), await keep_looks(store, now)]
        looks = (await store.query("SELECT countIf(arm != '') FROM agg_arrangement_looks FINAL")).rows[0][0]
    finally:
        await client.close()
        await store.close()
    changed = sorted(t for t in before if before[t] != after.get(t))
    return {
        "routes": routes,
        "answered": answered,
        "changed": changed,
        "writes": store.writes,
        "tables": len(before),
        "kept": kept,
        "looks": int(looks),
    }


if __name__ == "__main__":
    print_run(run, 6000)
