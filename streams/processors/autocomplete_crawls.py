"""Completed autocomplete crawls -> network, churn, nmi, association and structure rows, and shock alerts.

Runs in the worker after a batch holding ``crawl_completed`` markers is stored, so the
crawl's nodes (same partition key, sent before the marker) are already in ClickHouse.
A marker whose nodes are not all there yet (a client that posts out of order) stays
pending and is retried on the worker's timer. Every write replaces rows by key, so a
replay recomputes the same numbers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from analytics.stats.autocomplete import Node
from analytics.stats.autocomplete_shocks import Shock, ShockRule, evaluate_round
from core.store import Store, StoreError, StoreUnavailable
from schemas.sql import quote
from streams.detectors.alerts import alert_record
from streams.recompute.autocomplete_rows import (
    NETWORKS,
    CompletedCrawl,
    association_rows,
    churn_rows,
    crawl_row,
    edge_rows,
    structure_rows,
)

log = logging.getLogger(__name__)

CrawlKey = tuple[str, str, str]  # engine, root, crawl_id
RoundKey = tuple[str, str, str]  # engine, crawl_id, study_id

MARKER_SQL = """
SELECT toString(received_at) AS completed_at, max_depth, trimming_rule, n_nodes, n_edges, n_failed,
       study_id
FROM crawl_markers
WHERE type = 'crawl_completed' AND engine = {engine} AND root = {root} AND crawl_id = {crawl_id}
ORDER BY received_at LIMIT 1
"""
NODES_SQL = """
SELECT query, parent, depth, arrayMap(s -> s.1, suggestions) AS ranks,
       arrayMap(s -> s.2, suggestions) AS texts, status
FROM autocomplete_nodes
WHERE engine = {engine} AND root = {root} AND crawl_id = {crawl_id}
ORDER BY depth, received_at, query
"""
PREVIOUS_SQL = """
SELECT crawl_id FROM crawl_markers
WHERE type = 'crawl_completed' AND engine = {engine} AND root = {root} AND study_id = {study_id}
  AND n_failed = 0 AND received_at < toDateTime64({completed_at}, 3, 'UTC')
ORDER BY received_at DESC LIMIT 1
"""
ROUND_SQL = """
SELECT root, crawl_id, nmi FROM autocomplete_crawls
WHERE engine = {engine} AND study_id = {study_id}
  AND root IN (SELECT root FROM autocomplete_crawls WHERE engine = {engine} AND crawl_id = {crawl_id})
ORDER BY root, completed_at, crawl_id
"""
ROUND_PROGRESS_SQL = """
SELECT (SELECT uniqExact(root) FROM crawl_markers
        WHERE type = 'crawl_started' AND engine = {engine} AND crawl_id = {crawl_id}) AS started,
       (SELECT uniqExact(root) FROM autocomplete_crawls
        WHERE engine = {engine} AND crawl_id = {crawl_id}) AS done,
       (SELECT toUnixTimestamp64Milli(now64(3)) - toUnixTimestamp64Milli(max(received_at))
        FROM crawl_markers WHERE engine = {engine} AND crawl_id = {crawl_id}) AS quiet_ms
"""
RECENT_ROUNDS_DAYS = 7
RECENT_ROUNDS_SQL = f"""
SELECT engine, crawl_id, any(study_id) FROM crawl_markers
WHERE type = 'crawl_completed' AND received_at >= now() - INTERVAL {RECENT_ROUNDS_DAYS} DAY
GROUP BY engine, crawl_id
"""
"""Rounds a restarted worker checks once more: one it had not judged yet (still settling)
lived only in memory. Judging a round again raises nothing new (the alert id is the round)."""
ORPHAN_BATCH = 1000
"""Crawls picked up per scan, oldest first, so a rebuild (migration 0022) judges rounds in order;
a full batch means more are waiting, and the next tick scans again."""
ORPHANS_SQL = f"""
SELECT engine, root, crawl_id FROM crawl_markers
WHERE type = 'crawl_completed'
  AND (engine, root, crawl_id) NOT IN (SELECT engine, root, crawl_id FROM autocomplete_crawls)
ORDER BY received_at LIMIT {ORPHAN_BATCH}
"""
STUDY_CRAWLS_SQL = """
SELECT root, crawl_id FROM crawl_markers
WHERE type = 'crawl_completed' AND engine = {engine} AND study_id = {study_id}
ORDER BY received_at, root, crawl_id
"""
WAIT_TICKS = 60
"""Timer ticks (5 s each) a crawl waits for missing nodes before it is analysed as it is."""
ORPHAN_SCAN_EVERY = 12
"""Every this many ticks (and on the first), completed crawls never analysed are found in
ClickHouse: pending crawls live in memory and a restarted worker forgets them."""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def shock_alert(engine: str, shock: Shock, rule: ShockRule, now: datetime) -> dict[str, Any]:
    """An ``alerts`` row; its id depends only on engine and round, so it is raised once."""
    return alert_record(
        "autocomplete_shock",
        "warning",
        f"{engine}/{shock.round_id}",
        f"autocomplete shock on {engine} in crawl round {shock.round_id}: "
        f"{len(shock.roots_dropped)} of {shock.roots_evaluated} roots dropped "
        f"at least {rule.drop} below their nmi baseline",
        {
            "roots": list(shock.roots_dropped),
            "share": shock.share,
            "roots_evaluated": shock.roots_evaluated,
            "rule": rule.__dict__,
        },
        now,
    )


class AutocompleteAnalytics:
    def __init__(
        self,
        store: Store,
        raise_alert: Callable[[dict[str, Any]], Awaitable[None]],
        rule: ShockRule | None = None,
        settle_s: float = 0.0,
        positions: Callable[[], Mapping[int, tuple[int | None, int | None]]] | None = None,
    ) -> None:
        self.store = store
        self.raise_alert = raise_alert
        self.rule = rule or ShockRule()
        self.settle_s = settle_s
        """A round is judged only once no marker of it has been received for this long."""
        self.positions = positions
        """The worker's autocomplete partitions: (high watermark, committed offset) of each."""
        self.unjudged: dict[RoundKey, dict[int, int] | None] = {}
        """Rounds whose every started root is analysed, waiting to settle (checked each tick),
        with the high watermarks the worker's commits must pass first (None: not taken yet)."""
        self.pending: set[CrawlKey] = set()
        self.waits: dict[CrawlKey, int] = {}
        self.ticks = 0
        self.more_orphans = False
        self.lock = asyncio.Lock()
        """One analysis at a time: the timer's and a batch's would otherwise both judge a round."""

    async def after_store(self, events: Sequence[Mapping[str, Any]]) -> None:
        """A stored batch of autocomplete events: analyse the crawls it completed."""
        completed = [e for e in events if e.get("type") == "crawl_completed"]
        if completed:
            await self.crawls_completed(completed)

    async def crawls_completed(self, markers: Iterable[Mapping[str, Any]]) -> None:
        """Analyse the crawls these ``crawl_completed`` events finished (raises on store errors,
        so the sink retries the batch)."""
        keys = {(str(m["engine"]), str(m["root"]), str(m["crawl_id"])) for m in markers}
        await self._analyse(keys)

    async def retry_pending(self) -> None:
        """Timer: crawls whose nodes were incomplete are tried again, and now and then the
        completed crawls no worker analysed (a restart forgot them) are picked up; rounds
        waiting to settle are judged once they have."""
        due, self.pending = set(self.pending), set()
        self.ticks += 1
        try:
            if self.ticks == 1 and self.settle_s > 0:
                recent = await self.store.query(RECENT_ROUNDS_SQL)
                for e, c, s in recent.rows:
                    self.unjudged.setdefault((str(e), str(c), str(s)), None)
            if self.ticks % ORPHAN_SCAN_EVERY == 1 or self.more_orphans:
                found = await self.store.query(ORPHANS_SQL)
                due |= {(str(e), str(r), str(c)) for e, r, c in found.rows}
                self.more_orphans = len(found.rows) >= ORPHAN_BATCH
            if due:
                await self._analyse(due)
            for key in sorted(self.unjudged):  # a copy: a check removes its round
                async with self.lock:
                    await self._check_shock(*key)
        except (StoreError, StoreUnavailable) as exc:
            self.pending |= due
            # the store restarting is expected and retried: one line; a refused statement is not
            log.warning(
                "autocomplete analytics failed; retrying on the next tick (%s)",
                exc,
                exc_info=not isinstance(exc, StoreUnavailable),
            )

    async def recompute_study(self, engine: str, study_id: str) -> None:
        """Analyse every completed crawl of a study on an engine again, one round at a time in
        the order the rounds completed, as the worker met them (a bulk import's raw rows:
        each round's shock is judged against the rounds before it). Crawls are analysed
        with the nodes stored, none waited for: the import is in."""
        sql = STUDY_CRAWLS_SQL.format(engine=quote(engine), study_id=quote(study_id))
        found = await self.store.query(sql)
        rounds: dict[str, set[CrawlKey]] = {}
        for root, crawl_id in found.rows:
            rounds.setdefault(str(crawl_id), set()).add((engine, str(root), str(crawl_id)))
        for keys in rounds.values():
            async with self.lock:
                await self._analyse_locked(keys, wait=False)

    async def _analyse(self, keys: set[CrawlKey]) -> None:
        async with self.lock:
            await self._analyse_locked(keys)

    async def _analyse_locked(self, keys: set[CrawlKey], wait: bool = True) -> None:
        rounds: set[tuple[str, str, str]] = set()
        for key in sorted(keys):
            crawl = await self._load(*key)
            if crawl is None:
                continue  # no marker (yet): nothing to analyse
            if wait and len(crawl.nodes) < crawl.n_nodes:
                self.waits[key] = self.waits.get(key, 0) + 1
                if self.waits[key] <= WAIT_TICKS:
                    self.pending.add(key)  # nodes still on their way
                    continue
                log.warning(
                    "crawl %s of %r on %s: %d of %d nodes arrived; analysed as it is",
                    key[2],
                    key[1],
                    key[0],
                    len(crawl.nodes),
                    crawl.n_nodes,
                )
            self.waits.pop(key, None)
            previous_id = await self._previous(crawl)
            previous = await self._load(crawl.engine, crawl.root, previous_id) if previous_id else None
            now = _now()
            await self._insert("agg_autocomplete_edges", edge_rows(crawl, now))
            # The trimmed (default) network last, its crawl row last of all: that row is what
            # marks the crawl analysed (the orphan scan, the round's progress, the tests).
            for network in reversed(NETWORKS):
                this, before = crawl.in_network(network), previous.in_network(network) if previous else None
                await self._insert("agg_autocomplete_churn", churn_rows(this, before, now))
                await self._insert("agg_autocomplete_associations", association_rows(this, now))
                await self._insert("agg_autocomplete_structure", structure_rows(this, now))
                await self._insert("agg_autocomplete_crawls", [crawl_row(this, before, now)])
            rounds.add((crawl.engine, crawl.crawl_id, crawl.study_id))
        for engine, crawl_id, study_id in sorted(rounds):
            await self._check_shock(engine, crawl_id, study_id, settle=wait)

    def _watermarks(self) -> dict[int, int]:
        if self.positions is None:
            return {}
        return {p: high for p, (high, _) in self.positions().items() if high is not None}

    def _caught_up(self, key: RoundKey) -> bool:
        """Has the worker committed (so stored) every message below the watermarks taken for
        this round? A partition no longer assigned here is another worker's to pass."""
        if self.positions is None:
            return True
        marks = self.unjudged.get(key)
        if marks is None:
            return False
        committed = {p: c for p, (_, c) in self.positions().items()}
        return all(p not in committed or high <= (committed[p] or 0) for p, high in marks.items())

    async def _insert(self, table: str, rows: list[dict[str, Any]]) -> None:
        if rows:
            await self.store.insert_json_rows(table, b"\n".join(orjson.dumps(r) for r in rows))

    async def _load(self, engine: str, root: str, crawl_id: str) -> CompletedCrawl | None:
        params = {"engine": quote(engine), "root": quote(root), "crawl_id": quote(crawl_id)}
        marker = await self.store.query(MARKER_SQL.format(**params))
        if not marker.rows:
            return None
        completed_at, max_depth, rule, n_nodes, n_edges, n_failed, study_id = marker.rows[0]
        result = await self.store.query(NODES_SQL.format(**params))
        nodes, blocked = [], 0
        for query, parent, depth, ranks, texts, status in result.rows:
            nodes.append(Node(query, int(depth), tuple(zip(map(int, ranks), texts, strict=True)), parent))
            blocked += status == "blocked"
        return CompletedCrawl(
            engine,
            root,
            crawl_id,
            str(completed_at),
            int(max_depth),
            str(rule),
            int(n_nodes),
            int(n_edges),
            int(n_failed),
            tuple(nodes),
            blocked,
            str(study_id),
        )

    async def _previous(self, crawl: CompletedCrawl) -> str | None:
        result = await self.store.query(
            PREVIOUS_SQL.format(
                engine=quote(crawl.engine),
                root=quote(crawl.root),
                completed_at=quote(crawl.completed_at),
                study_id=quote(crawl.study_id),
            )
        )
        return str(result.rows[0][0]) if result.rows else None

    async def _check_shock(self, engine: str, crawl_id: str, study_id: str, settle: bool = True) -> None:
        """Judge the round, against the same study's history, once every root that started it
        is analysed and (``settle``) it has settled: no marker of it received for
        ``settle_s``, then every event on the worker's partitions up to the high watermarks
        seen after that stored and committed. The alert is raised once. (Judged earlier, the
        first few roots could decide alone, and an alert cannot be taken back: a root's start
        is stored from its own partition, which may be behind the partition of a root that
        already completed.)"""
        key = (engine, crawl_id, study_id)
        caught_up = not settle or self._caught_up(key)  # before the count: commits follow storage
        params = {"engine": quote(engine), "crawl_id": quote(crawl_id)}
        progress = await self.store.query(ROUND_PROGRESS_SQL.format(**params))
        started, done, quiet_ms = (int(x) for x in progress.rows[0])
        if done < started:
            self.unjudged.pop(key, None)  # its last root's analysis checks it again
            return
        if settle and quiet_ms < self.settle_s * 1000:
            self.unjudged[key] = None
            return
        if not caught_up:
            if self.unjudged.get(key) is None:
                self.unjudged[key] = self._watermarks()
            return
        self.unjudged.pop(key, None)
        result = await self.store.query(
            ROUND_SQL.format(engine=quote(engine), crawl_id=quote(crawl_id), study_id=quote(study_id))
        )
        history: dict[str, list[float]] = {}
        current: dict[str, float] = {}
        reached: set[str] = set()  # roots whose crawl of this round has been met
        for root, cid, value in result.rows:
            if cid == crawl_id:
                reached.add(root)
                if value is not None:
                    current[root] = float(value)
            elif root not in reached and value is not None:  # only crawls before this round
                history.setdefault(root, []).append(float(value))
        shock = evaluate_round(history, current, self.rule, round_id=crawl_id)
        if shock is not None:
            await self.raise_alert(shock_alert(engine, shock, self.rule, datetime.now(UTC)))
