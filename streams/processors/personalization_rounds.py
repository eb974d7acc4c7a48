"""SERP snapshots -> per-round comparisons against the control and the noise floor.

Each time snapshots of a round arrive, the whole round is recomputed from the stored
snapshots, so late arrivals update it and a replay rewrites the same rows. Only
snapshots received within ``wait_s`` of the round's first one take part: the result
depends on the events, not on when the worker happened to run. A round still missing
profiles is 'waiting' until its wait ends, then 'incomplete' (recorded, not dropped);
the worker's timer finds waiting rounds past their deadline in ClickHouse (not in
memory, so a restarted worker settles them too) and re-evaluates them.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any

import orjson

from analytics.stats.personalization import (
    LINKS,
    RANKS,
    DayPage,
    Snapshot,
    compare_round,
    day_to_day,
    links_of,
    skew_ms,
)
from core.store import Store, StoreError, StoreUnavailable
from schemas.sql import quote

log = logging.getLogger(__name__)

RoundKey = tuple[str, str, str]  # study_id, round_id, query

SNAPSHOTS_SQL = """
SELECT study_id, round_id, query, query_category, engine, profile_id, role, treatment, status,
       arrayMap(r -> (r.2, r.3), arraySort(r -> r.1, results)) AS items,
       toString(sent_at) AS sent, toUnixTimestamp64Milli(received_at) AS received_ms
FROM serp_snapshots
WHERE (study_id, round_id, query) IN ({keys})
ORDER BY study_id, round_id, query, received_at, profile_id
"""
WAITING_SQL = """
SELECT study_id, round_id, query FROM personalization_rounds
WHERE state = 'waiting' AND first_received_at < now64(3) - toIntervalMillisecond({wait_ms})
LIMIT 1000
"""
DAYS_SQL = """
SELECT study_id, profile_id, query, any(role), any(treatment), any(query_category),
       toDate(sent_at) AS day,
       argMin(arrayMap(r -> (r.2, r.3), arraySort(r -> r.1, results)), sent_at) AS items
FROM serp_snapshots
WHERE status = 'ok' AND (study_id, profile_id, query) IN ({keys})
  AND (toDate(sent_at) >= {since} OR (study_id, profile_id, query, toDate(sent_at)) IN ({before}))
GROUP BY study_id, profile_id, query, day
"""
BEFORE_SQL = """
SELECT study_id, profile_id, query, max(toDate(sent_at))
FROM serp_snapshots
WHERE status = 'ok' AND (study_id, profile_id, query) IN ({keys}) AND toDate(sent_at) < {since}
GROUP BY study_id, profile_id, query
"""
PROFILES_SQL = """
SELECT study_id, uniqExact(profile_id) FROM serp_snapshots WHERE study_id IN ({studies}) GROUP BY study_id
"""
STUDY_ROUNDS_SQL = """
SELECT DISTINCT round_id, query FROM serp_snapshots WHERE study_id = {study} ORDER BY round_id, query
"""
STUDY_PAGES_SQL = """
SELECT profile_id, query, toString(min(toDate(sent_at))) FROM serp_snapshots
WHERE study_id = {study} AND status = 'ok' GROUP BY profile_id, query ORDER BY profile_id, query
"""
STUDY_BATCH = 500
"""Rounds (or profile and query pairs) a study's recompute reads at once."""


def _ms_text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


class PersonalizationRounds:
    def __init__(self, store: Store, wait_s: float = 600.0) -> None:
        self.store = store
        self.wait_s = wait_s

    async def after_store(self, events: Sequence[Mapping[str, Any]]) -> None:
        """A stored batch of snapshots: recompute the rounds they belong to."""
        await self.snapshots_stored(events)

    async def snapshots_stored(self, events: Iterable[Mapping[str, Any]]) -> None:
        """Recompute the rounds these snapshots belong to (raises on store errors, so the
        sink retries the batch)."""
        events = list(events)
        keys = {(str(e["study_id"]), str(e["round_id"]), str(e["query"])) for e in events}
        if keys:
            await self._recompute(keys)
            pages = {(str(e["study_id"]), str(e["profile_id"]), str(e["query"])) for e in events}
            since = min(_parse_time(str(e["sent_at"])).astimezone(UTC).date() for e in events)
            await self._consistency(pages, since)

    async def recompute_study(self, study_id: str) -> None:
        """Every round of a study and its day-to-day consistency, recomputed from its stored
        snapshots ``STUDY_BATCH`` at a time (a bulk import's raw rows: no batch of the
        worker's brought them)."""
        study = quote(study_id)
        found = await self.store.query(STUDY_ROUNDS_SQL.format(study=study))
        rounds = [(study_id, str(r), str(q)) for r, q in found.rows]
        for start in range(0, len(rounds), STUDY_BATCH):
            await self._recompute(set(rounds[start : start + STUDY_BATCH]))
        found = await self.store.query(STUDY_PAGES_SQL.format(study=study))
        for start in range(0, len(found.rows), STUDY_BATCH):
            batch = found.rows[start : start + STUDY_BATCH]
            since = min(date.fromisoformat(str(first)) for _, _, first in batch)
            await self._consistency({(study_id, str(p), str(q)) for p, q, _ in batch}, since)

    async def expire_waiting(self) -> None:
        """Timer: rounds whose wait ended are settled as complete or incomplete."""
        try:
            found = await self.store.query(WAITING_SQL.format(wait_ms=int(self.wait_s * 1000)))
            due = {(str(s), str(r), str(q)) for s, r, q in found.rows}
            if due:
                await self._recompute(due)
        except (StoreError, StoreUnavailable) as exc:
            # the store restarting is expected and retried: one line; a refused statement is not
            log.warning(
                "settling personalization rounds failed; retrying on the next tick (%s)",
                exc,
                exc_info=not isinstance(exc, StoreUnavailable),
            )

    async def _recompute(self, keys: set[RoundKey]) -> None:
        listed = ", ".join(f"({quote(s)}, {quote(r)}, {quote(q)})" for s, r, q in sorted(keys))
        result = await self.store.query(SNAPSHOTS_SQL.format(keys=listed))
        by_round: dict[RoundKey, list[list[Any]]] = defaultdict(list)
        for row in result.rows:
            by_round[(row[0], row[1], row[2])].append(row)
        studies = ", ".join(quote(s) for s in sorted({k[0] for k in by_round}))
        expected = (
            dict((await self.store.query(PROFILES_SQL.format(studies=studies))).rows) if studies else {}
        )
        now_iso = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        pairs, rounds = [], []
        for key, rows in by_round.items():
            pair_rows, round_row = self._round(key, rows, int(expected.get(key[0], 0)), now_iso)
            pairs += pair_rows
            rounds.append(round_row)
        if pairs:
            await self.store.insert_json_rows(
                "agg_personalization_link_pairs", b"\n".join(orjson.dumps(p) for p in pairs)
            )
        if rounds:
            await self.store.insert_json_rows(
                "agg_personalization_rounds", b"\n".join(orjson.dumps(r) for r in rounds)
            )

    async def _consistency(self, keys: set[tuple[str, str, str]], since: date) -> None:
        """Day-to-day consistency of each (study, profile, query) a batch brought pages for,
        recomputed from ``since`` (the batch's earliest day) on: a page of day D changes only
        the rows of D and the next day seen, never an earlier one, so the days before are
        left alone and only the last of them is read, as the previous day of the first."""
        listed = ", ".join(f"({quote(s)}, {quote(p)}, {quote(q)})" for s, p, q in sorted(keys))
        since_sql = f"toDate({quote(since.isoformat())})"
        found = await self.store.query(BEFORE_SQL.format(keys=listed, since=since_sql))
        before = ", ".join(
            f"({quote(s)}, {quote(p)}, {quote(q)}, toDate({quote(str(d))}))" for s, p, q, d in found.rows
        )
        now_iso = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        result = await self.store.query(
            DAYS_SQL.format(keys=listed, since=since_sql, before=before or "(NULL, NULL, NULL, NULL)")
        )
        pages: dict[tuple[str, str, str], list[list[Any]]] = defaultdict(list)
        for row in result.rows:
            pages[(row[0], row[1], row[2])].append(row)
        out = []
        for (study, profile, query), rows in pages.items():
            role, treatment, category = rows[0][3], rows[0][4], rows[0][5]
            for links in LINKS:
                days = [DayPage(date.fromisoformat(str(r[6])), links_of(r[7], links)) for r in rows]
                for day, previous, jaccard, edit in day_to_day(days, RANKS):
                    out.append(
                        {
                            "study_id": study,
                            "profile_id": profile,
                            "role": role,
                            "treatment": treatment,
                            "query": query,
                            "query_category": category,
                            "links": links,
                            "day": day.isoformat(),
                            "previous_day": previous.isoformat(),
                            "jaccard": jaccard,
                            "edit_distance": edit,
                            "computed_at": now_iso,
                        }
                    )
        if out:
            await self.store.insert_json_rows(
                "agg_personalization_consistency", b"\n".join(orjson.dumps(r) for r in out)
            )

    def _round(
        self, key: RoundKey, rows: list[list[Any]], expected: int, now_iso: str
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        first_ms = min(int(r[11]) for r in rows)
        cutoff_ms = first_ms + self.wait_s * 1000
        in_time = [r for r in rows if int(r[11]) <= cutoff_ms]
        snapshots = [Snapshot(r[5], r[6], r[7], r[8], (), _parse_time(r[10])) for r in in_time]
        study, round_id, query = key
        category, engine = rows[0][3], rows[0][4]
        started = min(s.sent_at for s in snapshots)
        started_text = started.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        received = len({s.profile_id for s in snapshots})
        if received >= expected:
            state = "complete"
        elif time.time() * 1000 < cutoff_ms:
            state = "waiting"
        else:
            state = "incomplete"
        common = {
            "study_id": study,
            "round_id": round_id,
            "query": query,
            "query_category": category,
            "engine": engine,
            "round_started_at": started_text,
            "computed_at": now_iso,
        }
        pairs = [
            {
                **common,
                "links": links,
                "kind": c.kind,
                "treatment": c.treatment,
                "profile_a": c.profile_a,
                "profile_b": c.profile_b,
                "jaccard": c.jaccard,
                "edit_distance": c.edit_distance,
                "changed": [int(x) for x in c.changed],
                "rank1_moved": int(c.rank1_moved),
                "rank1_from": c.rank1_from,
                "rank1_to": c.rank1_to,
            }
            for links in LINKS
            for c in compare_round(
                [replace(s, urls=links_of(r[9], links)) for s, r in zip(snapshots, in_time, strict=True)],
                RANKS,
            )
        ]
        round_row = {
            **common,
            "first_received_at": _ms_text(first_ms),
            "skew_ms": skew_ms(snapshots),
            "profiles_expected": expected,
            "profiles_received": received,
            "profiles_failed": sum(s.status != "ok" for s in snapshots),
            "late": len(rows) - len(in_time),
            "state": state,
        }
        return pairs, round_row
