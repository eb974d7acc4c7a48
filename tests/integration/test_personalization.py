"""Personalization comparisons in ClickHouse equal the pure functions on the posted snapshots;
rounds missing a profile are recorded as incomplete, late snapshots are counted, skew is kept."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from analytics.stats.personalization import LINKS, DayPage, Snapshot, compare_round, day_to_day, links_of
from auditstream.cli import app
from tests.helpers import Service, wait_for

pytestmark = pytest.mark.integration
STUDY = "pers-e2e"
PROFILES = (
    ("ctl", "control", ""),
    ("twin", "control_twin", ""),
    ("t-in", "treatment", "logged_in"),
    ("t-bos", "treatment", "location=Boston"),
)


def snapshot(
    round_no: int,
    query: str,
    profile: tuple[str, str, str],
    urls: list[str],
    start: datetime,
    status: str = "ok",
    coverage: float | None = 1.0,
) -> dict[str, Any]:
    profile_id, role, treatment = profile
    # an ad (not a result), the organic results with a news box between the 3rd and 4th (its
    # link depends on the page), and related searches (no link: a static label) at the end
    organic = [{"rank": 0, "type": "organic", "url": u} for u in urls]
    news = {"rank": 0, "type": "top_stories", "url": f"https://news.example/{len(urls[0]) % 3}"}
    related = {"rank": 0, "type": "related_searches", "url": "related_searches"}
    components = [{"rank": 0, "type": "ad", "url": "https://ads.example/x"}, *organic[:3], news, *organic[3:]]
    results = [{**c, "rank": i + 1} for i, c in enumerate([*components, related])]
    return {
        "type": "serp_snapshot",
        "schema_version": 1,
        "event_id": str(uuid.uuid4()),
        "sent_at": start.isoformat(timespec="milliseconds"),
        "study_id": STUDY,
        "round_id": f"{STUDY}-r{round_no:04d}",
        "profile_id": profile_id,
        "role": role,
        "treatment": treatment,
        "engine": "google",
        "query": query,
        "query_category": "politics",
        "results": results,
        "coverage": coverage if status == "ok" else None,
        "result_estimate": 1000,
        "status": status,
        "raw_ref": "",
    }


def page(rng: random.Random, base: list[str], p: float, tag: str) -> list[str]:
    return [f"https://{tag}.example/{rng.random()}" if rng.random() < p else u for u in base]


def test_rounds_compare_exactly_and_record_incomplete_and_late(service: Service) -> None:
    rng = random.Random(3)
    # noon yesterday: the rounds' 11 s of sent_at stay on one day (the consistency pairs are
    # days apart), whenever the test runs
    start = (datetime.now(UTC) - timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
    posted: dict[str, list[Snapshot]] = {}
    posted_items: dict[str, list[list[tuple[str, str]]]] = {}
    events = []
    for r in range(12):
        query = f"query {r % 3}"
        base = [f"https://site{i}.example/{query}" for i in range(10)]
        for k, profile in enumerate(PROFILES):
            if r == 11 and profile[0] == "t-bos":
                continue  # round 11 misses a profile: incomplete after the wait
            urls = page(rng, base, 0.1, "noise")
            if profile[2] == "logged_in":
                urls = page(rng, urls, 0.3, "personal")
            status = "captcha" if (r == 7 and profile[0] == "t-in") else "ok"
            sent = start + timedelta(seconds=r, milliseconds=7 * k)
            # two pages of a layout the rules did not know, one from a crawler without coverage
            coverage = 0.4 if (r in (2, 9) and k == 0) else None if (r == 4 and k == 1) else 1.0
            events.append(snapshot(r, query, profile, urls, sent, status, coverage))
            items = [(c["type"], c["url"]) for c in events[-1]["results"]]
            posted.setdefault(f"{STUDY}-r{r:04d}", []).append(
                Snapshot(profile[0], profile[1], profile[2], status, tuple(urls), sent)
            )
            posted_items.setdefault(f"{STUDY}-r{r:04d}", []).append(items)
    assert service.post(events).status == 202

    def rounds() -> dict[str, dict[str, Any]]:
        rows = service.sql(f"SELECT * FROM personalization_rounds WHERE study_id = '{STUDY}'")
        return {r["round_id"]: r for r in rows}

    settled = wait_for(
        lambda: (
            (got := rounds())
            and len(got) == 12
            and all(r["state"] != "waiting" for r in got.values())
            and got
        ),
        60,
        "rounds settled",
    )
    assert settled[f"{STUDY}-r0011"]["state"] == "incomplete"
    assert settled[f"{STUDY}-r0011"]["profiles_received"] == 3
    assert {r["state"] for k, r in settled.items() if k != f"{STUDY}-r0011"} == {"complete"}
    assert settled[f"{STUDY}-r0007"]["profiles_failed"] == 1
    assert settled[f"{STUDY}-r0003"]["skew_ms"] == pytest.approx(21.0)  # 3 x 7 ms apart

    pairs = service.sql(
        "SELECT round_id, links, kind, treatment, profile_b, jaccard, edit_distance, changed, rank1_moved, "
        f"rank1_from, rank1_to FROM personalization_pairs WHERE study_id = '{STUDY}'"
    )
    stored = {(p["round_id"], p["links"], p["profile_b"]): p for p in pairs}
    expected = {}
    for links in LINKS:  # both lists, recounted from the posted pages
        for rid, snaps in posted.items():
            listed = [
                replace(s, urls=links_of(i, links)) for s, i in zip(snaps, posted_items[rid], strict=True)
            ]
            expected |= {(rid, links, c.profile_b): c for c in compare_round(listed)}
    assert set(stored) == set(expected)  # no pair with the CAPTCHA page
    assert any(
        c.edit_distance != expected[(r, "organic", b)].edit_distance
        for (r, k, b), c in expected.items()
        if k == "primary"
    )
    for key, c in expected.items():
        got = stored[key]
        assert (got["kind"], got["treatment"], got["edit_distance"], got["rank1_moved"]) == (
            c.kind,
            c.treatment,
            c.edit_distance,
            int(c.rank1_moved),
        )
        assert (got["rank1_from"], got["rank1_to"]) == (c.rank1_from, c.rank1_to)
        assert got["jaccard"] == pytest.approx(c.jaccard)
        assert got["changed"] == [int(x) for x in c.changed]
    expected = {(r, b): c for (r, k, b), c in expected.items() if k == "organic"}

    by_rank = service.sql(
        f"SELECT * FROM personalization_by_rank WHERE study_id = '{STUDY}' AND rank = 1 AND links = 'organic'"
    )
    treatments = {r["treatment"]: r for r in by_rank}
    noise = [c for c in expected.values() if c.kind == "noise"]
    logged = [c for c in expected.values() if c.treatment == "logged_in"]
    assert treatments["logged_in"]["changed_noise"] == pytest.approx(
        sum(c.changed[0] for c in noise) / len(noise)
    )
    assert treatments["logged_in"]["changed_treatment"] == pytest.approx(
        sum(c.changed[0] for c in logged) / len(logged)
    )

    # A snapshot arriving after the wait is kept in raw, counted as late, and changes nothing.
    late = snapshot(0, "query 0", PROFILES[3], ["https://late.example/"] * 10, start)  # a resend, too late
    assert service.post([late]).status == 202
    wait_for(lambda: rounds()[f"{STUDY}-r0000"]["late"] == 1, 30, "the late snapshot counted")
    assert rounds()[f"{STUDY}-r0000"]["state"] == "complete"
    again = service.sql(
        "SELECT profile_b, jaccard FROM personalization_pairs "
        f"WHERE round_id = '{STUDY}-r0000' AND profile_b = 't-bos' AND links = 'organic'"
    )
    assert again[0]["jaccard"] == pytest.approx(expected[(f"{STUDY}-r0000", "t-bos")].jaccard)


def test_summary_views_run(service: Service) -> None:
    """The per-treatment, per-query and day-to-day views answer (one day of data: no day pairs)."""
    for view in ("personalization_by_treatment", "personalization_by_query"):
        service.sql(f"SELECT * FROM {view} LIMIT 5")
    assert service.scalar(f"SELECT count() FROM personalization_consistency WHERE study_id = '{STUDY}'") == 0


def test_report_personalization(service: Service) -> None:
    if not service.scalar(f"SELECT count() FROM personalization_rounds WHERE study_id = '{STUDY}'"):
        # pytest-xdist sent the test that posts the study to the other worker's service
        test_rounds_compare_exactly_and_record_incomplete_and_late(service)
    args = ["report", "personalization", "--study", STUDY, "--url", service.url, "--api-key", service.api_key]
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout)
    assert {t["treatment"] for t in doc["by_treatment"]} == {"logged_in", "location=Boston"}
    assert doc["rounds"][0]["rounds"] == 12 and doc["rounds"][0]["incomplete"] == 1
    assert doc["rounds"][0]["skew_ms_max"] == pytest.approx(21.0)
    assert len(doc["by_rank"]) == 2 * 10
    overall = doc["overall"][0]
    assert overall["personalization"] == pytest.approx(
        overall["changed"] - overall["changed_noise"], abs=2e-4
    )
    assert {c["query_category"] for c in doc["by_category"]} == {"politics"}
    pages = doc["pages"][0]  # the first test: 12 rounds of 4 profiles less one, plus the late one
    assert (pages["snapshots"], pages["parsed"]) == (12 * len(PROFILES), 12 * len(PROFILES) - 1)
    assert (pages["unknown_layout"], pages["coverage_unrecorded"]) == (2, 1)
    # Figure 16: the shares of where new rank-1 results came from, per treatment, equal a
    # recount of the stored pairs whose rank 1 moved
    moved = service.sql(
        "SELECT treatment, rank1_from FROM personalization_pairs "
        f"WHERE study_id = '{STUDY}' AND links = 'primary' AND kind = 'treatment' AND rank1_moved = 1"
    )
    came = [r for r in doc["rank1"] if r["direction"] == "came_from"]
    assert sum(r["pairs"] for r in came) == len(moved) > 0
    for treatment in {r["treatment"] for r in came}:
        mine = [r for r in came if r["treatment"] == treatment]
        assert sum(r["share"] for r in mine) == pytest.approx(1.0, abs=1e-3)
        for r in mine:
            assert r["pairs"] == sum(
                1 for m in moved if m["treatment"] == treatment and m["rank1_from"] == r["rank"]
            )
    table = CliRunner().invoke(app, args, terminal_width=200)
    assert table.exit_code == 0 and "most personalized queries" in table.output


def test_without_a_noise_floor_personalization_is_unknown(service: Service) -> None:
    """The twin was blocked every round: no noise pairs, so personalization is NULL, not raw change."""
    start = datetime.now(UTC)
    events = []
    for r in range(3):
        urls = [f"https://site{i}.example/" for i in range(10)]
        for profile in PROFILES[:3]:
            status = "captcha" if profile[1] == "control_twin" else "ok"
            event = snapshot(r, "q", profile, urls[::-1] if profile[2] else urls, start, status)
            event["study_id"], event["round_id"] = "pers-nonoise", f"pers-nonoise-r{r:04d}"
            events.append(event)
    assert service.post(events).status == 202

    def rows() -> list[dict[str, Any]]:
        return service.sql(
            "SELECT * FROM personalization_by_treatment WHERE study_id = 'pers-nonoise' AND links = 'organic'"
        )

    (row,) = wait_for(rows, 60, "the study compared")
    assert row["changed"] == pytest.approx(1.0) and row["changed_noise"] is None
    assert row["personalization"] is None


def test_day_to_day_consistency_per_category(service: Service) -> None:
    """Figures 12-13: each profile's page against its previous day's, Jaccard and edit
    distance, both lists; equal to a recount, and per category in the report."""
    study, rng = "pers-days", random.Random(8)
    today = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    pages: dict[tuple[str, str], list[tuple[datetime, list[tuple[str, str]]]]] = {}
    events = []
    for d, day in enumerate((4, 3, 1)):  # a gap: day 1's previous day is day 3
        for r, (query, category) in enumerate((("q news", "news"), ("q gadgets", "gadgets"))):
            base = [f"https://{category}{i}.example/" for i in range(10)]
            for profile in PROFILES[:3]:
                urls = page(rng, base, 0.2, f"d{d}")
                event = snapshot(r, query, profile, urls, today - timedelta(days=day))
                event["study_id"], event["round_id"] = study, f"{study}-d{d}-r{r}"
                event["query_category"] = category
                events.append(event)
                pages.setdefault((profile[0], query), []).append(
                    (today - timedelta(days=day), [(c["type"], c["url"]) for c in event["results"]])
                )
    # a second, later page the same day does not count: the first of the day does
    late_page = snapshot(
        9, "q news", PROFILES[0], ["https://later.example/"] * 10, today - timedelta(days=1, hours=-3)
    )
    late_page["study_id"], late_page["round_id"], late_page["query_category"] = study, f"{study}-late", "news"
    assert service.post([*events, late_page]).status == 202

    def stored() -> list[dict[str, Any]]:
        return service.sql(f"SELECT * FROM personalization_consistency WHERE study_id = '{study}'")

    rows = wait_for(lambda: len(got := stored()) == 3 * 2 * 2 * 2 and got, 60, "consistency rows")
    by_key = {(r["profile_id"], r["query"], r["links"], str(r["day"])): r for r in rows}
    for (profile, query), seen in pages.items():
        for links in LINKS:
            days = [DayPage(moment.date(), links_of(items, links)) for moment, items in seen]
            for day, previous, jaccard, edit in day_to_day(days):
                got = by_key[(profile, query, links, day.isoformat())]
                assert str(got["previous_day"]) == previous.isoformat()
                assert got["jaccard"] == pytest.approx(jaccard) and got["edit_distance"] == edit

    args = ["report", "personalization", "--study", study, "--url", service.url, "--api-key", service.api_key]
    result = CliRunner().invoke(app, [*args, "--format", "json", "--links", "organic"])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout)
    organic = [r for r in rows if r["links"] == "organic"]
    for row in doc["consistency"]:
        mine = [
            r for r in organic if r["query_category"] == row["query_category"] and r["role"] == row["role"]
        ]
        assert row["day_pairs"] == len(mine) == 2
        assert row["jaccard"] == pytest.approx(sum(r["jaccard"] for r in mine) / 2, abs=1e-4)
        assert row["edit_distance"] == pytest.approx(sum(r["edit_distance"] for r in mine) / 2, abs=0.01)
    assert {r["query_category"] for r in doc["consistency"]} == {"news", "gadgets"}

    # Later batches recompute only from their earliest day on: a new day, then a day that
    # arrives late between two stored ones (it becomes the previous day of its successor).
    key = (PROFILES[1][0], "q news")
    for n, day in enumerate((0, 2)):
        event = snapshot(
            20 + n,
            "q news",
            PROFILES[1],
            page(rng, [f"https://news{i}.example/" for i in range(10)], 0.3, f"x{n}"),
            today - timedelta(days=day),
        )
        event["study_id"], event["round_id"], event["query_category"] = study, f"{study}-x{n}", "news"
        assert service.post([event]).status == 202
        pages[key].append((today - timedelta(days=day), [(c["type"], c["url"]) for c in event["results"]]))
        want = {
            (links, d.isoformat()): (p.isoformat(), j, e)
            for links in LINKS
            for d, p, j, e in day_to_day([DayPage(m.date(), links_of(i, links)) for m, i in pages[key]])
        }

        def mine(want: dict = want) -> bool:
            rows = service.sql(
                f"SELECT links, toString(day) AS d, toString(previous_day) AS p, jaccard, edit_distance "
                f"FROM personalization_consistency WHERE study_id = '{study}' AND profile_id = '{key[0]}' "
                "AND query = 'q news'"
            )
            got = {(r["links"], r["d"]): (r["p"], r["jaccard"], r["edit_distance"]) for r in rows}
            return got.keys() == want.keys() and all(
                got[k][0] == want[k][0] and abs(got[k][1] - want[k][1]) < 1e-9 and got[k][2] == want[k][2]
                for k in want
            )

        wait_for(mine, 60, f"consistency of {key} after batch {n}")
