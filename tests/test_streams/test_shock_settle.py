"""A round's shock is judged only once it has settled (on chDB): a root whose
``crawl_started`` is stored after the other roots were analysed (its partition behind) is
in the judgement, not left out of an alert that cannot be taken back."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from analytics.stats.autocomplete_shocks import ShockRule
from collectors.simulate.autocomplete_traffic import AutocompleteSimulation, CrawlConfig
from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate
from streams.processors.autocomplete_crawls import AutocompleteAnalytics

ROOTS = ("jeb bush", "ted cruz", "marco rubio")
SHOCK = 4
RULE = ShockRule(min_roots=2)  # two roots alone could make the shock


def stamp(events: Iterable[dict[str, Any]], at: datetime) -> bytes:
    return b"\n".join(
        orjson.dumps({**e, "received_at": at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]}) for e in events
    )


def rounds() -> list[list[dict[str, Any]]]:
    sim = AutocompleteSimulation(CrawlConfig(roots=ROOTS, shock_rounds=frozenset({SHOCK}), study="settle"))
    return [list(sim.crawl_round(r)) for r in range(SHOCK + 1)]


def of_root(events: list[dict[str, Any]], root: str, *types: str) -> list[dict[str, Any]]:
    return [e for e in events if e["root"] == root and e["type"] in types]


class Partitions:
    """The worker's autocomplete partitions as the test sets them: (high watermark, committed)."""

    def __init__(self) -> None:
        self.at: dict[int, tuple[int | None, int | None]] = {0: (5, 5), 1: (7, 7)}

    def __call__(self) -> dict[int, tuple[int | None, int | None]]:
        return dict(self.at)


async def test_a_root_started_late_is_in_its_rounds_judgement(tmp_path: Path) -> None:
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    raised: list[dict[str, Any]] = []

    async def alert(a: dict[str, Any]) -> None:
        raised.append(a)

    partitions = Partitions()
    analytics = AutocompleteAnalytics(store, alert, RULE, settle_s=3600, positions=partitions)
    try:
        await migrate(store)
        *history, shock = rounds()
        long_ago = datetime.now(UTC) - timedelta(days=2)
        for r, events in enumerate(history):  # rounds long settled, the worker caught up: no shock
            await store.insert_json_rows(
                "raw_autocomplete_events", stamp(events, long_ago + timedelta(minutes=r))
            )
            await analytics.crawls_completed(e for e in events if e["type"] == "crawl_completed")
        await analytics.retry_pending()
        assert raised == [] and analytics.unjudged == {}

        first, second, late = ROOTS
        early = [
            e for root in (first, second) for e in of_root(shock, root, "crawl_started", "autocomplete_node")
        ]
        early += of_root(shock, first, "crawl_completed") + of_root(shock, second, "crawl_completed")
        await store.insert_json_rows("raw_autocomplete_events", stamp(early, datetime.now(UTC)))
        await analytics.crawls_completed(
            of_root(shock, first, "crawl_completed") + of_root(shock, second, "crawl_completed")
        )
        round_key = ("google", shock[0]["crawl_id"], "settle")
        assert raised == [] and analytics.unjudged == {round_key: None}  # two roots done, not quiet

        # Quiet long enough, but partition 1 is behind (the late root's start is in it): the
        # round waits for the worker to commit past the watermarks seen now.
        analytics.settle_s = 0
        partitions.at[1] = (10, 7)
        await analytics.retry_pending()
        await analytics.retry_pending()
        assert raised == [] and analytics.unjudged == {round_key: {0: 5, 1: 10}}

        # Partition 1 caught up: the late root's start is stored, and the round waits for it.
        await store.insert_json_rows(
            "raw_autocomplete_events", stamp(of_root(shock, late, "crawl_started"), datetime.now(UTC))
        )
        partitions.at[1] = (10, 10)
        await analytics.retry_pending()
        assert raised == [] and analytics.unjudged == {}

        rest = of_root(shock, late, "autocomplete_node", "crawl_completed")
        await store.insert_json_rows("raw_autocomplete_events", stamp(rest, datetime.now(UTC)))
        await analytics.crawls_completed(of_root(shock, late, "crawl_completed"))
        assert raised == [] and analytics.unjudged == {round_key: {0: 5, 1: 10}}
        await analytics.retry_pending()  # caught up: judged
        assert len(raised) == 1 and analytics.unjudged == {}
        details = orjson.loads(raised[0]["details"])
        assert details["roots_evaluated"] == 3 and sorted(details["roots"]) == sorted(ROOTS)

        # A restarted worker (the round's wait lived in memory) judges the recent rounds once
        # more, to the same alert id: raised once by the alert service.
        again: list[dict[str, Any]] = []

        async def alert_again(a: dict[str, Any]) -> None:
            again.append(a)

        restarted = AutocompleteAnalytics(store, alert_again, RULE, settle_s=0.001, positions=partitions)
        await restarted.retry_pending()
        await restarted.retry_pending()
        assert [a["alert_id"] for a in again] == [raised[0]["alert_id"]] and restarted.unjudged == {}
    finally:
        await store.close()


async def test_without_a_worker_s_positions_a_settled_round_is_judged_at_once(tmp_path: Path) -> None:
    """An import's recompute and the unit of a lone store: no partitions to wait for."""
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    raised: list[dict[str, Any]] = []

    async def alert(a: dict[str, Any]) -> None:
        raised.append(a)

    analytics = AutocompleteAnalytics(store, alert, RULE, settle_s=60)
    try:
        await migrate(store)
        long_ago = datetime.now(UTC) - timedelta(days=2)
        for r, events in enumerate(rounds()):
            await store.insert_json_rows(
                "raw_autocomplete_events", stamp(events, long_ago + timedelta(minutes=r))
            )
            await analytics.crawls_completed(e for e in events if e["type"] == "crawl_completed")
        assert [orjson.loads(a["details"])["roots_evaluated"] for a in raised] == [3]
        assert analytics.unjudged == {}
    finally:
        await store.close()
