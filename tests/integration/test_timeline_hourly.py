"""``report timeline --window 1h`` from the per-hour replicate sums (migration 0027) gives
exactly the numbers of the timeline from the 10-second slices: on a fresh chDB (with the
migration's own backfill, re-recomputes and a row that must disappear), and on studies
built through the service, imported and streamed."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, date, datetime, timedelta
from typing import Any

import orjson
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from core.store.base import QueryLimits, QueryResult, Store
from studies.arrangement.read.timeline import _timeline_from_slices, reads_hourly, run_timeline
from studies.arrangement.selection import ReportQuery
from tests.helpers import Service, http, post_study, run_own_process
from tests.integration.test_end_to_end import assert_hourly_replicates_exact
from tests.test_studies.test_arrangement_hourly import exact

pytestmark = pytest.mark.integration


def test_hourly_rows_and_timeline_on_a_fresh_chdb() -> None:
    out = run_own_process("tests.integration.helpers.hourly_chdb", "6000")
    assert out["hours"] == 49 and out["rows"] > out["hours"]  # two days from 07:30: 49 hours
    assert out["backfill_differs"] == 0  # the migration's SQL weights = the worker's numpy ones
    assert out["recomputed_differs"] == 0  # a re-import, and the stream's hour-by-hour path
    assert (out["ghost_before"], out["ghost_after"], out["after_ghost_differs"]) == (1, 0, 0)
    for name, timeline in out["timelines"].items():
        assert timeline["windows"] > 10 and timeline["equal"], name


def _arrow_type(name: str) -> pa.DataType:
    for wrapper in ("LowCardinality(", "Nullable("):
        if name.startswith(wrapper):
            return _arrow_type(name[len(wrapper) : -1])
    if name.startswith("Array("):
        return pa.list_(_arrow_type(name[len("Array(") : -1]))
    simple = {"String": pa.string(), "Float64": pa.float64(), "Float32": pa.float32()}
    if name in simple:
        return simple[name]
    return getattr(pa, name.lower())()  # UInt8..UInt64, Int8..Int64


def _text(column: str) -> str:
    return f"arrayStringConcat(arrayMap(x -> toString(x), {column}), ',')"


class AnalystSqlStore(Store):
    """The service's read-only ``POST /v1/sql`` as a store, so both timeline paths run their
    own statements on the service's data from this process. Arrow is built from the JSON
    rows with the column types ClickHouse gave; array columns travel as text (orjson 3.13
    cannot parse some of chDB's pretty-printed JSON holding long runs of small numbers:
    "failed to allocate memory", while json.loads reads it)."""

    def __init__(self, svc: Service) -> None:
        self.svc = svc

    async def execute(self, sql: str, *, background: bool = False) -> None:
        raise NotImplementedError("read-only")

    async def insert_json_rows(self, table: str, lines: bytes, *, background: bool = False) -> None:
        raise NotImplementedError("read-only")

    async def query(
        self, sql: str, *, read_only: bool = False, limits: QueryLimits | None = None
    ) -> QueryResult:
        headers = {"Authorization": f"Bearer {self.svc.api_key}", "Content-Type": "application/json"}
        resp = await asyncio.to_thread(
            http, "POST", self.svc.url + "/v1/sql", orjson.dumps({"sql": sql}), headers, 120
        )
        assert resp.status == 200, (resp.status, resp.body)
        return QueryResult(resp.body["columns"], resp.body["types"], resp.body["rows"])

    async def query_arrow(self, sql: str) -> Any:
        meta = await self.query(f"SELECT * FROM ({sql}) LIMIT 0")
        lists = {n for n, kind in zip(meta.columns, meta.types, strict=True) if kind.startswith("Array(")}
        if lists:
            picked = ", ".join(f"{_text(n)} AS text_{n}" if n in lists else n for n in meta.columns)
            sql = f"SELECT {picked} FROM ({sql})"
        result = await self.query(sql, read_only=True)
        columns = {}
        for i, (name, kind) in enumerate(zip(meta.columns, meta.types, strict=True)):
            values = [row[i] for row in result.rows]
            if name in lists:
                values = [[int(x) for x in v.split(",")] if v else [] for v in values]
            columns[name] = pa.array(values, _arrow_type(kind))
        return pa.table(columns)


def both_paths(svc: Service, query: ReportQuery, baseline: str = "control") -> tuple[list[Any], list[Any]]:
    assert reads_hourly(query, 3600, 0)
    store = AnalystSqlStore(svc)

    async def run() -> tuple[list[Any], list[Any]]:
        fast = await run_timeline(store, query, 3600, 0, baseline)
        slow = await _timeline_from_slices(store, query, 3600, 0, baseline)
        return exact(fast), exact(slow)

    return asyncio.run(run())


IMPORTED = "timeline-hourly-import"


@pytest.fixture(scope="module")
def imported(service: Service, tmp_path_factory: pytest.TempPathFactory) -> Service:
    """A study of a day and a half in the past, through ``auditstream import``."""
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=IMPORTED, seed=41, installs=80))
    start, n = datetime(2026, 9, 14, 18, 20, tzinfo=UTC), 5000
    lines = []
    for i, event in enumerate(itertools.islice(traffic.events(), n)):
        moment = start + timedelta(seconds=i * 129_600 // n)
        event["sent_at"] = moment.isoformat(timespec="milliseconds")
        lines.append(orjson.dumps(event))
    path = tmp_path_factory.mktemp("timeline") / "study.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = CliRunner().invoke(
        app, ["import", str(path), "--url", service.url, "--api-key", service.api_key]
    )
    assert result.exit_code == 0, result.output
    return service


@pytest.mark.parametrize(
    ("changes", "baseline"),
    [
        ({}, "control"),
        ({"burn_in_days": 0}, "swap_1_2"),
        ({"burn_in_days": 7, "unit_mode": "impression"}, "control"),
        ({"since": date(2026, 9, 15), "until": date(2026, 9, 15)}, "control"),
        ({"since": datetime(2026, 9, 14, 22), "until": datetime(2026, 9, 15, 9)}, "hide_ads_box"),
    ],
)
def test_imported_study_same_timeline_from_hours_and_slices(
    imported: Service, changes: dict[str, Any], baseline: str
) -> None:
    fast, slow = both_paths(imported, ReportQuery(IMPORTED, **changes), baseline)
    assert len({w[0] for w in fast}) > 8
    assert fast == slow


def test_imported_study_hourly_rows_equal_a_recount(imported: Service) -> None:
    assert_hourly_replicates_exact(imported, IMPORTED)


def test_streamed_study_same_timeline_from_hours_and_slices(service: Service) -> None:
    post_study(service, TrafficConfig(experiment_id="timeline-hourly-stream", seed=43, installs=120), 4000)
    assert_hourly_replicates_exact(service, "timeline-hourly-stream")
    for burn_in in (0, 4):
        fast, slow = both_paths(service, ReportQuery("timeline-hourly-stream", burn_in_days=burn_in))
        assert fast and fast == slow
