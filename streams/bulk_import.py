"""Bulk import: the worker's write path for a whole file at once, without Kafka.

An earlier study's export or a paper's published data arrives as large chunks of
validated events (``ingest/import_routes.py``). Each chunk is stored like a stream batch,
once per ``event_id`` (``RawWriter``: already-stored ids are dropped, so importing a
file twice stores nothing the second time). The derived tables are then recomputed in
bulk, one experiment, engine and day at a time, from the deduplicated raw rows, rather
than per chunk: the spans a file touched are returned with each chunk and recomputed
once at the end. A crawler family's analyses are recomputed per study the same way
(the autocomplete crawls of a study and engine, round after round in the order they
completed; a personalization study's rounds and day-to-day consistency), with the
worker's own processors. Recomputing is idempotent, so an import that stopped half-way
is finished by importing the same file again.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from analytics.stats.autocomplete_shocks import ShockRule
from core.settings import Settings
from core.store import Store, StoreError
from schemas.erased_installs import HASHES_SQL, INSTALL_HASH_SQL
from schemas.sql import quote
from schemas.topics import AUTOCOMPLETE, EXTENSION, FAMILIES, SERP, Family
from schemas.wire import parse_received_at
from streams.detectors.alerts import AlertService
from streams.processors.autocomplete_crawls import AutocompleteAnalytics
from streams.processors.personalization_rounds import PersonalizationRounds
from streams.sinks.later_copies import delete_events, delete_later_copies
from streams.sinks.raw_writer import RawWriter
from studies.arrangement.write import clicks_by_rank, closed_sums, hourly_replicates, slice_rows

DAY_S = 86400
HORIZON_DAYS = 7
"""A chunk's ids are looked up within its received_at range widened by the dedup horizon
each way (``dedup_horizon_days``, as the stream looks back for a client's retry): an
imported line without received_at is stamped with its sent_at, and a live copy of it was
received whenever it arrived (hours later for a client whose clock is off), and one id
may sit in a file twice, days apart. A lookup of an hour each way stored such copies
twice."""

IMPORTABLE_FAMILIES = frozenset(f.name for f in FAMILIES)
"""Families a bulk import takes: each one's derived tables are recomputed from its raw rows
(extension days and installs, autocomplete and personalization studies), or it has none
(the panel's install profiles)."""


def shock_rule_of(settings: Settings) -> ShockRule:
    """The autocomplete shock rule of the settings: the worker's and an import's alike."""
    return ShockRule(
        baseline_window=settings.shock_baseline_window,
        min_history=settings.shock_min_history,
        drop=settings.shock_drop,
        min_share=settings.shock_min_share,
        min_roots=settings.shock_min_roots,
    )


@dataclass(frozen=True, order=True)
class Span:
    """One experiment, engine and UTC day whose derived rows an import must recompute."""

    experiment_id: str
    engine: str
    day_start: int  # unix seconds, a multiple of 86400

    def to_json(self) -> dict[str, Any]:
        return {"experiment_id": self.experiment_id, "engine": self.engine, "day_start": self.day_start}


@dataclass(frozen=True, order=True)
class CrawlStudy:
    """The autocomplete crawls of one study (their markers' ``study_id``) on one engine,
    whose analyses an import must recompute."""

    engine: str
    study_id: str

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "study_id": self.study_id}


def spans_of(events: Iterable[Mapping[str, Any]]) -> set[Span]:
    """The days of each experiment and engine that extension events fall on."""
    out = set()
    for e in events:
        ts = int(parse_received_at(e["received_at"]).timestamp())
        out.add(Span(e["experiment_id"], e["engine"], ts - ts % DAY_S))
    return out


class _RangedRawWriter(RawWriter):
    """Looks a chunk's ids up in its own time range (both ends) widened by the horizon,
    however old it is: the fallback for a chunk ClickHouse refuses as a whole, which is
    then isolated row by row."""

    async def _existing_ids(self, family: Family, batch: Any) -> set[str]:
        if not batch.events:
            return set()
        where = _in_range(*_time_range(batch.events, self.horizon_days * DAY_S))
        found: set[str] = set()
        for start in range(0, len(batch.events), LOOKUP_CHUNK):
            ids = ", ".join(quote(e["event_id"]) for e in batch.events[start : start + LOOKUP_CHUNK])
            result = await self.store.query(
                f"SELECT toString(event_id) FROM {family.raw_table} WHERE {where} AND event_id IN ({ids})"
            )
            found.update(r[0] for r in result.rows)
        return found


LOOKUP_CHUNK = 5000


_RANGE_SQL = (
    "SELECT intDiv(min(toUnixTimestamp64Milli(received_at)), 1000), "
    "intDiv(max(toUnixTimestamp64Milli(received_at)), 1000) FROM {staging}"
)
"""A chunk's received_at range in Int64 seconds (toUnixTimestamp would overflow outside
1970-2106; the import refuses such lines, this does not rely on it)."""


def _time_range(events: list[dict[str, Any]], margin_s: int) -> tuple[int, int]:
    times = [int(parse_received_at(e["received_at"]).timestamp()) for e in events]
    return min(times) - margin_s, max(times) + margin_s + 1


def _in_range(lo: int, hi: int) -> str:
    return f"received_at >= toDateTime64({lo}, 3, 'UTC') AND received_at < toDateTime64({hi}, 3, 'UTC')"


Touched = tuple[frozenset[Span], frozenset[CrawlStudy], frozenset[str]]
"""What rows make an import recompute: extension days, autocomplete studies, SERP studies."""


def touched_of(family: Family, rows: Iterable[Mapping[str, Any]]) -> Touched:
    """What these rows make an import recompute (``BulkImporter._touched``, from rows in hand)."""
    rows = list(rows)
    spans = frozenset(spans_of(rows)) if family is EXTENSION else frozenset()
    crawls = frozenset(
        CrawlStudy(str(v["engine"]), str(v.get("study_id", "")))
        for v in rows
        if family is AUTOCOMPLETE and v.get("type") == "crawl_completed"
    )
    studies = frozenset(str(v["study_id"]) for v in rows if family is SERP)
    return spans, crawls, studies


def _merged(a: Touched, b: Touched) -> Touched:
    return a[0] | b[0], a[1] | b[1], a[2] | b[2]


@dataclass(frozen=True)
class ImportWrite:
    """What storing one chunk of one family did, and the days it touched (extension)."""

    inserted: int
    duplicates: int
    dead: int
    spans: frozenset[Span] = frozenset()
    crawl_studies: frozenset[CrawlStudy] = frozenset()
    serp_studies: frozenset[str] = frozenset()
    """The personalization studies (``study_id``) whose rounds to recompute."""


class BulkImporter:
    def __init__(
        self,
        store: Store,
        horizon_days: int = HORIZON_DAYS,
        shock_rule: ShockRule | None = None,
        round_wait_s: float = 600.0,
    ) -> None:
        self.store = store
        self.margin_s = horizon_days * DAY_S
        self.raw = _RangedRawWriter(store, horizon_days)
        # the worker's processors, with an alert service of their own: a shock an import
        # finds is stored once (by its id, as the worker's), not published on the topic
        self.autocomplete = AutocompleteAnalytics(store, AlertService(store).raise_once, shock_rule)
        self.personalization = PersonalizationRounds(store, round_wait_s)

    async def write(self, family: Family, body: bytes, count: int) -> ImportWrite:
        """Store one chunk of one family's canonical rows (``count`` of them, as JSON lines
        or one JSON array), once per event id.

        The chunk goes into a staging table in one insert, and ClickHouse copies over the
        rows whose ids the raw table does not hold yet (in the chunk's time range, read
        from the staging table): no ids travel as SQL text, and the copy is native. A chunk
        ClickHouse refuses goes through the stream's path instead, which keeps the rows it
        refuses in ``dead_letters``.
        """
        if not count:
            return ImportWrite(0, 0, 0)
        staging = f"import_staging_{uuid.uuid4().hex}"
        raw = family.raw_table
        await self.store.execute(f"CREATE TABLE {staging} AS {raw} ENGINE = Memory")
        try:
            try:
                await self.store.insert_json_rows(staging, body)
            except StoreError:
                return await self._row_by_row(family, body)
            lo, hi = (await self.store.query(_RANGE_SQL.format(staging=staging))).rows[0]
            where = _in_range(int(lo) - self.margin_s, int(hi) + self.margin_s + 1)
            new = f"import_new_{uuid.uuid4().hex}"
            # the stored ids are found by the chunk's own (a set of at most a chunk), so the
            # horizon's days of raw rows are scanned, never held in memory as a set
            ids = f"SELECT event_id FROM {staging}"
            stored = f"SELECT event_id FROM {raw} WHERE {where} AND event_id IN ({ids})"
            await self.store.execute(
                f"CREATE TABLE {new} ENGINE = Memory AS SELECT * FROM {staging} WHERE event_id NOT IN "
                f"({stored}) LIMIT 1 BY event_id"
            )
            try:
                inserted = int((await self.store.query(f"SELECT count() FROM {new}")).rows[0][0])
                # looked up again as it is inserted, in one statement: the worker may have
                # stored some of these ids since (the same events arriving live); its own
                # lookup and insert are one step on the store's write lane, this is another
                fresh = f"SELECT event_id FROM {new}"
                again = f"SELECT event_id FROM {raw} WHERE {where} AND event_id IN ({fresh})"
                guarded = f"SELECT * FROM {new} WHERE event_id NOT IN ({again})"
                if "install_id" in family.required:  # an erased install's events, never again
                    guarded += f" AND {INSTALL_HASH_SQL} NOT IN ({HASHES_SQL})"
                await self.store.execute(f"INSERT INTO {raw} {guarded}")
                later: list[dict[str, Any]] = []
                if not self.store.one_writer:  # a server: the worker may store some at the same moment
                    # every id of the chunk: a retried chunk finds its own earlier copies stored
                    later = await delete_later_copies(self.store, raw, where, [ids])
                    if "install_id" in family.required:
                        await self._delete_erased(raw, where, ids)
                    inserted -= await self._not_stored(raw, where, new)
            finally:
                await self.store.execute(f"DROP TABLE IF EXISTS {new}")
            touched = _merged(await self._touched(family, staging), touched_of(family, later))
        finally:
            await self.store.execute(f"DROP TABLE IF EXISTS {staging}")
        return ImportWrite(inserted, count - inserted, 0, *touched)

    async def _delete_erased(self, raw: str, where: str, ids: str) -> None:
        """The chunk's rows of installs erased while it was inserted, deleted (a server runs
        an erasure beside this insert; ``RawWriter._delete_erased`` says why this is enough)."""
        erased = f"{INSTALL_HASH_SQL} IN ({HASHES_SQL})"
        found = await self.store.query(
            f"SELECT toString(event_id) FROM {raw} WHERE {where} AND event_id IN ({ids}) AND {erased}"
        )
        await delete_events(self.store, raw, where, [str(r[0]) for r in found.rows])

    async def _not_stored(self, raw: str, where: str, new: str) -> int:
        """Rows of ``new`` the raw table does not hold as they are: another writer stored
        them first (the guard skipped them, or they were deleted as later copies)."""
        ids = f"SELECT event_id FROM {new}"
        held = f"SELECT event_id, received_at FROM {raw} WHERE {where} AND event_id IN ({ids})"
        missing = f"SELECT count() FROM {new} WHERE (event_id, received_at) NOT IN ({held})"
        result = await self.store.query(missing)
        return int(result.rows[0][0])

    async def _touched(self, family: Family, staging: str) -> Touched:
        """What a chunk's rows make the import recompute: the days of extension events, the
        studies of crawl markers (nodes belong to their markers' study), SERP studies."""
        if family is EXTENSION:
            result = await self.store.query(
                f"SELECT DISTINCT experiment_id, engine, toUInt32(toStartOfDay(received_at)) FROM {staging}"
            )
            return frozenset(Span(e, g, int(d)) for e, g, d in result.rows), frozenset(), frozenset()
        if family is AUTOCOMPLETE:
            result = await self.store.query(
                f"SELECT DISTINCT engine, study_id FROM {staging} WHERE type = 'crawl_completed'"
            )
            return frozenset(), frozenset(CrawlStudy(str(e), str(s)) for e, s in result.rows), frozenset()
        if family is SERP:
            result = await self.store.query(f"SELECT DISTINCT study_id FROM {staging}")
            return frozenset(), frozenset(), frozenset(str(s) for (s,) in result.rows)
        return frozenset(), frozenset(), frozenset()

    async def _row_by_row(self, family: Family, body: bytes) -> ImportWrite:
        from streams.recompute.batch import DecodedBatch

        values = orjson.loads(body) if body.startswith(b"[") else [orjson.loads(x) for x in body.split(b"\n")]
        lines = [orjson.dumps(v) for v in values]
        written = await self.raw.write(family, DecodedBatch(events=values, lines=lines))
        touched = touched_of(family, [*values, *written.later_copies])
        return ImportWrite(written.inserted, written.duplicates, written.dead, *touched)

    async def recompute_day(self, span: Span) -> None:
        """The minute aggregate, the per-install 10-second slices and the hours' replicate sums
        of one day. The closed sums of the day's installs are marked stale before (a crash
        half-way leaves them to be rebuilt) and after (a set read while the slices changed is
        stale too): ``recompute_installs`` rebuilds them (``closed_sums``)."""
        experiment_id, engine = span.experiment_id, span.engine
        lo, hi = span.day_start, span.day_start + DAY_S
        stale = closed_sums.stale_sql(experiment_id, engine, lo, hi)
        await self.store.execute(stale)
        await self.store.execute(clicks_by_rank.range_sql(experiment_id, engine, lo, hi))
        await self.store.execute(slice_rows.slices_range_sql(experiment_id, engine, lo, hi))
        await self.store.execute(stale)
        await hourly_replicates.recompute_day(self.store, experiment_id, engine, lo)

    async def recompute_installs(self, experiment_id: str, engine: str) -> None:
        """The study-wide per-install rows of the installs whose days were recomputed (their
        closed sums are stale), once every day of the import is: each install recomputed
        whole from its slices and its closed sums rebuilt; then the derived tables are merged
        down, so reads with FINAL find one part per partition and skip the merge (a report's
        statements take a fraction of their time on unmerged parts; bench/README.md, "Figures
        behind the code")."""
        stale = await self.store.query(closed_sums.stale_installs_sql(experiment_id, engine))
        if stale.rows:
            newest = await self.store.query(closed_sums.newest_slice_sql(experiment_id, engine))
            targets = {(experiment_id, engine): closed_sums.closed_through(int(newest.rows[0][0]))}
            installs = [(experiment_id, engine, str(r[0])) for r in stale.rows]
            await closed_sums.recompute(self.store, installs, (), targets)
        tables = (
            "agg_arrangement_install",
            "agg_arrangement_install_subset",
            "agg_arrangement_install_closed",
            "agg_arrangement_10s",
            "agg_arrangement_replicates_1h",
        )
        for table in (*tables, "agg_clicks_by_rank_10s"):
            await self.store.execute(f"OPTIMIZE TABLE {table} FINAL")

    async def recompute_crawl_study(self, study: CrawlStudy) -> None:
        """Every completed crawl of an autocomplete study on an engine analysed again, in the
        order the rounds completed (shocks judged as the worker judges them)."""
        await self.autocomplete.recompute_study(study.engine, study.study_id)

    async def recompute_serp_study(self, study_id: str) -> None:
        """Every round of a personalization study compared again, and its consistency."""
        await self.personalization.recompute_study(study_id)
