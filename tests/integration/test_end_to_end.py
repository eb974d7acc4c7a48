"""Done-means 2 and 3: every accepted event lands exactly once; aggregates equal a recount."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import threading

import orjson
import pytest

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from collectors.simulate.poster import post_batches
from tests.helpers import Service, http, report_json, wait_for

pytestmark = pytest.mark.integration

RECOUNT = """
SELECT experiment_id, engine, arm, r, toStartOfMinute(received_at) AS window_start,
       countIf(type = 'click' AND page_index = 0) AS units,
       countIf(type = 'serp_view' AND page_index = 0) AS impressions,
       countIf(type = 'click' AND page_index = 0 AND ifNull(original_rank, 0) = r) AS clicks
FROM extension_events ARRAY JOIN range(1, 11) AS r
WHERE experiment_id = '{exp}'
GROUP BY experiment_id, engine, arm, r, window_start
"""
STORED = """
SELECT experiment_id, engine, arm, original_rank, window_start, units, impressions, clicks
FROM clicks_by_rank_1m WHERE experiment_id = '{exp}'
"""


def _key(row: dict) -> tuple:
    rank = row["r"] if "r" in row else row["original_rank"]
    return (row["engine"], row["arm"], int(rank), row["window_start"])


def aggregate_matches(svc: Service, exp: str) -> bool:
    def keyed(rows: list[dict]) -> dict:
        return {_key(r): (r["units"], r["impressions"], r["clicks"]) for r in rows}

    recount = keyed(svc.sql(RECOUNT.format(exp=exp)))
    return bool(recount) and keyed(svc.sql(STORED.format(exp=exp))) == recount


def assert_aggregate_exact(svc: Service, exp: str) -> None:
    """The stored aggregate equals a recount once the worker finished its last batch."""
    wait_for(lambda: aggregate_matches(svc, exp), 90, f"clicks_by_rank_1m of {exp} = recount")


INSTALL_RECOUNT = """
SELECT install_id, arm, toDate(received_at) AS day, identified,
       countIf(type = 'click' AND page_index = 0) AS units,
       countIf(type = 'serp_view' AND page_index = 0) AS impressions,
       countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 1) AS c1,
       countIf(type = 'click' AND page_index = 0 AND element_type = 'ad') AS ad
FROM extension_events WHERE experiment_id = '{exp}'
GROUP BY install_id, arm, day, identified
"""
INSTALL_STORED = """
SELECT install_id, arm, day, identified, sum(units) AS units, sum(impressions) AS impressions,
       sum(clicks[1]) AS c1, sum(clicks_ad) AS ad
FROM arrangement_install_day WHERE experiment_id = '{exp}'
GROUP BY install_id, arm, day, identified
"""


def install_day_counts(rows: list[dict]) -> dict:
    """Per (install, arm, day, identified): units, impressions, c1 clicks and ad clicks."""
    return {
        (r["install_id"], r["arm"], r["day"], int(r["identified"])): (
            r["units"],
            r["impressions"],
            r["c1"],
            r["ad"],
        )
        for r in rows
    }


def assert_install_stats_exact(svc: Service, exp: str) -> None:
    keyed = install_day_counts

    def matches() -> bool:
        recount = keyed(svc.sql(INSTALL_RECOUNT.format(exp=exp)))
        return bool(recount) and keyed(svc.sql(INSTALL_STORED.format(exp=exp))) == recount

    wait_for(matches, 90, f"arrangement_install_day of {exp} = recount")
    assert_study_install_rows_exact(svc, exp)
    assert_hourly_replicates_exact(svc, exp)


STUDY_RECOUNT = """
SELECT install_id, engine, arm,
       least(greatest(dateDiff('day', install_day, toDate(received_at)), 0), 7) AS age,
       toUInt8(identified) AS ident, toUInt8(ads_top_count > 0) AS ads, toUInt8(box != 'none') AS boxp,
       toUInt8(has(ssr_positions, length(arrayFilter((p, i) -> p = i, ssr_positions,
                                                      arrayEnumerate(ssr_positions))) + 2)) AS ssr,
       countIf(type = 'click' AND page_index = 0) AS units,
       countIf(type = 'serp_view' AND page_index = 0) AS impressions,
       countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 1) AS c1,
       countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 2) AS c2,
       countIf(type = 'click' AND page_index = 0 AND element_type = 'shopping_box') AS box_clicks
FROM extension_events WHERE experiment_id = '{exp}'
GROUP BY install_id, engine, arm, age, ident, ads, boxp, ssr
"""
SUBSET_NAMES = ("all", "ads_or_box", "no_ads_no_box", "box", "ssr_c1_c2", "ads_no_box", "no_ssr_c1_c2", "ads")
SUBSET_STORED = """
SELECT subset, install_id, engine, arm, install_age_days AS age, identified AS ident, units,
       impressions, clicks[1] AS c1, clicks[2] AS c2, clicks_box AS box_clicks
FROM arrangement_install_subset WHERE experiment_id = '{exp}'
"""
STUDY_STORED = """
SELECT install_id, engine, arm, install_age_days AS age, identified AS ident, ads_present AS ads,
       box_present AS boxp, ssr_c1_c2 AS ssr, units, impressions, clicks[1] AS c1, clicks[2] AS c2,
       clicks_box AS box_clicks
FROM arrangement_install WHERE experiment_id = '{exp}'
"""


def assert_study_install_rows_exact(svc: Service, exp: str) -> None:
    """The study-wide per-install rows (what reports without a time range read) equal a
    recount of the raw events, context by context."""

    def keyed(rows: list[dict]) -> dict:
        return {tuple(str(v) for v in list(r.values())[:8]): tuple(list(r.values())[8:]) for r in rows}

    def matches() -> bool:
        recount = keyed(svc.sql(STUDY_RECOUNT.format(exp=exp)))
        return bool(recount) and keyed(svc.sql(STUDY_STORED.format(exp=exp))) == recount

    wait_for(matches, 90, f"arrangement_install of {exp} = recount")

    def in_subset(name: str, ads: int, boxp: int, ssr: int) -> bool:
        return {
            "all": True,
            "ads_or_box": ads == 1 or boxp == 1,
            "no_ads_no_box": ads == 0 and boxp == 0,
            "box": boxp == 1,
            "ssr_c1_c2": ssr == 1,
            "ads_no_box": ads == 1 and boxp == 0,
            "no_ssr_c1_c2": ssr == 0,
            "ads": ads == 1,
        }[name]

    def subsets_match() -> bool:
        """And the per-subset rows (what reports read) equal the recount, summed per subset."""
        expected: dict[tuple, list[int]] = {}
        for r in svc.sql(STUDY_RECOUNT.format(exp=exp)):
            for name in SUBSET_NAMES:
                if in_subset(name, r["ads"], r["boxp"], r["ssr"]):
                    key = (name, r["install_id"], r["engine"], r["arm"], int(r["age"]), int(r["ident"]))
                    sums = expected.setdefault(key, [0] * 5)
                    for i, column in enumerate(("units", "impressions", "c1", "c2", "box_clicks")):
                        sums[i] += int(r[column])
        stored = {
            (r["subset"], r["install_id"], r["engine"], r["arm"], int(r["age"]), int(r["ident"])): [
                int(r[c]) for c in ("units", "impressions", "c1", "c2", "box_clicks")
            ]
            for r in svc.sql(SUBSET_STORED.format(exp=exp))
        }
        return bool(expected) and stored == expected

    wait_for(subsets_match, 90, f"arrangement_install_subset of {exp} = recount")


HOURLY_RECOUNT = """
SELECT engine, toUInt32(toStartOfHour(received_at)) AS hour, install_id, arm,
       least(greatest(dateDiff('day', install_day, toDate(received_at)), 0), 7) AS age,
       toUInt8(identified) AS ident, countIf(type = 'click' AND page_index = 0) AS units,
       countIf(type = 'serp_view' AND page_index = 0) AS impressions, [{per_rank}] AS clicks
FROM extension_events WHERE experiment_id = '{exp}'
GROUP BY engine, hour, install_id, arm, age, ident
""".replace(
    "{per_rank}",
    ", ".join(
        f"countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = {r})"
        for r in range(1, 11)
    ),
)
HOURLY_STORED = """
SELECT engine, toUInt32(hour_start) AS hour, arm, install_age_days AS age, identified AS ident, units,
       impressions, clicks, installs_units, installs_impressions,
       arrayStringConcat(arrayMap(x -> toString(x), rep_units), ',') AS rep_units_text,
       arrayStringConcat(arrayMap(x -> toString(x), rep_impressions), ',') AS rep_impressions_text,
       arrayStringConcat(arrayMap(x -> toString(x), rep_clicks), ',') AS rep_clicks_text
FROM arrangement_replicates_1h WHERE experiment_id = '{exp}'
"""
"""The replicate sums as text: orjson 3.13 cannot parse some of chDB's pretty-printed JSON
holding long runs of small numbers ("failed to allocate memory")."""


def hourly_recount(rows: list[dict]) -> dict[tuple, tuple]:
    """The per-hour replicate sums from per-install counts, with the scalar reference weights
    (``poisson1(unit_uniform(install, r, 0))``), summed row by row: per (engine, hour, arm, age,
    identified) the point sums, the installs (each counted once per hour, arm and identified,
    at its oldest age with units / impressions) and the 200 replicate sums, clicks rank-major."""
    import numpy as np

    from analytics.stats.bootstrap import poisson1, unit_uniform

    weights: dict[str, np.ndarray] = {}
    sums: dict[tuple, list[np.ndarray]] = {}
    oldest: dict[tuple, int] = {}
    for r in rows:
        install = r["install_id"]
        if install not in weights:
            weights[install] = np.array([poisson1(unit_uniform(install, b, 0)) for b in range(200)])
        w = weights[install]
        key = (r["engine"], int(r["hour"]), r["arm"], int(r["age"]), int(r["ident"]))
        point, _, units, impressions, clicks = sums.setdefault(
            key,
            [
                np.zeros(12, np.int64),
                np.zeros(2, np.int64),
                *(np.zeros(n, np.int64) for n in (200, 200, 2000)),
            ],
        )
        point += [r["units"], r["impressions"], *r["clicks"]]
        units += w * r["units"]
        impressions += w * r["impressions"]
        for i, c in enumerate(r["clicks"]):
            clicks[i * 200 : (i + 1) * 200] += w * c  # rank-major: [i * 200 + b]
        for n, column in enumerate(("units", "impressions")):
            if r[column] > 0:
                context = (r["engine"], int(r["hour"]), install, r["arm"], int(r["ident"]), n)
                oldest[context] = max(oldest.get(context, -1), int(r["age"]))
    for (engine, hour, _, arm, ident, n), age in oldest.items():
        sums[(engine, hour, arm, age, ident)][1][n] += 1
    return {key: tuple(part.tolist() for part in parts) for key, parts in sums.items()}


def assert_hourly_replicates_exact(svc: Service, exp: str) -> None:
    """The per-hour replicate sums (what `report timeline --window 1h` reads) equal a recount
    of the raw events with the scalar reference weights, row for row."""

    def stored() -> dict[tuple, tuple]:
        return {
            (r["engine"], int(r["hour"]), r["arm"], int(r["age"]), int(r["ident"])): (
                [r["units"], r["impressions"], *r["clicks"]],
                [r["installs_units"], r["installs_impressions"]],
                *(
                    [int(x) for x in r[f"rep_{c}_text"].split(",")]
                    for c in ("units", "impressions", "clicks")
                ),
            )
            for r in svc.sql(HOURLY_STORED.format(exp=exp))
        }

    def matches() -> bool:
        expected = hourly_recount(svc.sql(HOURLY_RECOUNT.format(exp=exp)))
        return bool(expected) and stored() == expected

    wait_for(matches, 90, f"arrangement_replicates_1h of {exp} = recount")


RANGE_STORED = """
SELECT arm, sum(units) AS units, sum(impressions) AS impressions, sumForEach(clicks) AS clicks
FROM agg_arrangement_10s FINAL
WHERE experiment_id = '{exp}'
  AND slice_start >= toDateTime({lo}, 'UTC') AND slice_start < toDateTime({hi}, 'UTC')
GROUP BY arm
"""
RANGE_RECOUNT = """
SELECT arm, countIf(type = 'click' AND page_index = 0) AS units,
       countIf(type = 'serp_view' AND page_index = 0) AS impressions,
       [{per_rank}] AS clicks
FROM extension_events
WHERE experiment_id = '{exp}'
  AND received_at >= toDateTime64({lo}, 3, 'UTC') AND received_at < toDateTime64({hi}, 3, 'UTC')
GROUP BY arm
""".replace(
    "{per_rank}",
    ", ".join(
        f"countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = {r})"
        for r in range(1, 11)
    ),
)


def assert_random_ranges_exact(svc: Service, exp: str, ranges: int = 6, seed: int = 0) -> None:
    """Per-arm units, impressions and clicks c1..c10 over random time ranges (10-second
    boundaries, as the report's --since/--until) equal a recount of the raw events. Every
    range holds events: received_at may have gaps (while a killed ingest restarts, nothing
    is received, and on a loaded machine that can last a whole slice), and an empty range
    would prove nothing."""
    rng = random.Random(seed)
    first, last = svc.sql(
        f"SELECT toUInt32(min(received_at)) AS lo, toUInt32(max(received_at)) AS hi "
        f"FROM extension_events WHERE experiment_id = '{exp}'"
    )[0].values()
    filled = {
        int(r["s"])
        for r in svc.sql(
            f"SELECT DISTINCT intDiv(toUInt32(received_at), 10) AS s "
            f"FROM extension_events WHERE experiment_id = '{exp}'"
        )
    }
    lo_slice, hi_slice = first // 10, last // 10 + 1
    for _ in range(ranges):
        a, b = sorted(rng.sample(range(lo_slice, hi_slice + 1), 2))
        while not filled & set(range(a, b)):  # the first and last slices hold events: this ends
            a, b = sorted(rng.sample(range(lo_slice, hi_slice + 1), 2))
        lo, hi = a * 10, b * 10

        def keyed(rows: list[dict]) -> dict:
            return {r["arm"]: (r["units"], r["impressions"], list(r["clicks"])) for r in rows}

        seen: dict[str, dict] = {}

        def matches(lo: int = lo, hi: int = hi, seen: dict[str, dict] = seen) -> bool:
            seen["stored"] = keyed(svc.sql(RANGE_STORED.format(exp=exp, lo=lo, hi=hi)))
            seen["recount"] = keyed(svc.sql(RANGE_RECOUNT.format(exp=exp, lo=lo, hi=hi)))
            return bool(seen["recount"]) and seen["stored"] == seen["recount"]

        # Waited on, not asserted at once: after a crash the replay may still be recomputing.
        try:
            wait_for(matches, 90, f"10-second slices of {exp} in [{lo}, {hi}) = recount")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; events span [{first}, {last}]; last comparison: {seen}") from None


def post(svc: Service, exp: str, total: int, seed: int, **kw) -> list[str]:
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=exp, seed=seed, installs=300))
    stats = asyncio.run(post_batches(svc.url, svc.api_key, traffic.batches(100, total), keep_ids=True, **kw))
    assert stats.accepted == total and stats.rejected == 0
    return stats.accepted_ids


def test_ten_thousand_events_exactly_once(service: Service) -> None:
    ids = post(service, "e2e", 10_000, seed=11)
    wait_for(
        lambda: service.scalar("SELECT count() FROM extension_events WHERE experiment_id='e2e'") == 10_000,
        60,
        "10,000 rows",
    )
    rows = service.sql(
        "SELECT toString(event_id) AS id FROM raw_extension_events WHERE experiment_id = 'e2e'"
    )
    stored = [r["id"] for r in rows]
    assert len(stored) == len(set(stored)) == 10_000
    assert set(stored) == set(ids)
    assert_aggregate_exact(service, "e2e")
    assert_install_stats_exact(service, "e2e")


def test_client_retry_is_counted_once(service: Service) -> None:
    traffic = ExtensionTraffic(TrafficConfig(experiment_id="retry", seed=5))
    batch = next(traffic.batches(50, 50))
    assert service.post(batch).status == 202
    assert service.post(batch).status == 202  # the client did not see the first answer
    assert service.post(batch[:10]).status == 202
    wait_for(
        lambda: service.scalar("SELECT count() FROM extension_events WHERE experiment_id='retry'") == 50,
        30,
        "50 rows",
    )
    # A sentinel posted after the retries proves the worker has processed them all.
    sentinel = next(ExtensionTraffic(TrafficConfig(experiment_id="retry-s", seed=6)).batches(1, 1))
    assert service.post(sentinel).status == 202
    wait_for(
        lambda: service.scalar("SELECT count() FROM extension_events WHERE experiment_id='retry-s'") == 1,
        30,
        "sentinel",
    )
    assert service.scalar("SELECT count() FROM raw_extension_events WHERE experiment_id='retry'") == 50
    assert_aggregate_exact(service, "retry")


@pytest.mark.parametrize(
    ("process", "exp"),
    [("worker-0", "crash"), ("store", "crash-store"), ("ingest", "crash-ingest")],
)
def test_a_process_sigkilled_mid_stream_loses_and_duplicates_nothing(
    service: Service, process: str, exp: str
) -> None:
    """SIGKILL the worker, the process that owns chDB, or ingest while 12,000 events are
    posted: the supervisor starts it again, the client sends again what it got no answer
    for, and every event is stored once, with every derived table equal to a recount.
    (Ingest answers 202 only once the broker has the events, so a killed ingest loses
    only answers, never accepted events; the broker dying too is README's "Limits".)"""
    total = 12_000
    old_pid = service.pid(process)

    def stored(table: str, experiment: str = exp) -> int | None:
        """Rows of ``experiment`` in ``table``, or None while the service restarts a process."""
        resp = http(
            "POST",
            service.url + "/v1/sql",
            orjson.dumps({"sql": f"SELECT count() AS n FROM {table} WHERE experiment_id = '{experiment}'"}),
            {"Authorization": f"Bearer {service.api_key}", "Content-Type": "application/json"},
        )
        return int(resp.body["rows"][0][0]) if resp.status == 200 else None

    posted = threading.Event()
    killed_while_posting: list[bool] = []

    def kill_when_mid_stream() -> None:
        wait_for(lambda: (stored("raw_extension_events") or 0) > 500, 60, "the stream to be under way")
        os.kill(old_pid, signal.SIGKILL)
        killed_while_posting.append(not posted.is_set())

    # the worker consumes (a fresh service's joins its group a few seconds after intake is
    # ready, and a restarted one once its predecessor's session has expired), so that the
    # kill comes while the stream flows
    post(service, f"{exp}-first", 100, seed=1)
    wait_for(lambda: stored("extension_events", f"{exp}-first") == 100, 60, "the worker consuming")
    killer = threading.Thread(target=kill_when_mid_stream)
    killer.start()
    ids = post(service, exp, total, seed=23, rate=1500)  # 8 s of posting
    posted.set()
    killer.join()
    assert killed_while_posting == [True]
    wait_for(lambda: service.pid(process) != old_pid, 60, f"the supervisor to restart {process}")
    wait_for(lambda: stored("extension_events") == total, 180, "all rows")
    raw = service.scalar(f"SELECT count() FROM raw_extension_events WHERE experiment_id='{exp}'")
    distinct = service.scalar(
        f"SELECT uniqExact(event_id) FROM raw_extension_events WHERE experiment_id='{exp}'"
    )
    assert distinct == total and set(ids) == {
        r["id"]
        for r in service.sql(
            "SELECT DISTINCT toString(event_id) AS id FROM raw_extension_events "
            f"WHERE experiment_id = '{exp}'"
        )
    }
    # Physical copies from the replay may exist until merged; no query the project makes sees them.
    assert raw >= total
    assert_aggregate_exact(service, exp)
    assert_install_stats_exact(service, exp)
    assert_random_ranges_exact(service, exp)
    # the read side is back too: the report (computed in the board's process, through the
    # store) counts the kept units of a recount from the events
    kept = service.scalar(
        "SELECT countIf(type = 'click' AND page_index = 0 AND identified "
        "AND dateDiff('day', install_day, toDate(received_at)) >= 4) "
        f"FROM extension_events WHERE experiment_id = '{exp}' AND engine = 'google'"
    )
    assert sum(arm["units"] for arm in report_json(service, exp)["arms"]) == kept > 0
