"""Hannak et al.'s Figures 12-15 as series to draw (`report personalization` sections), each
equal to a recount of the posted pages with the pure functions."""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from analytics.stats.personalization import DayPage, Snapshot, compare_round, day_to_day
from auditstream.cli import app
from tests.helpers import Service, wait_for
from tests.integration.test_personalization import PROFILES, page, snapshot

pytestmark = pytest.mark.integration


def figures_study(
    rng: random.Random,
) -> tuple[list[dict[str, Any]], dict[str, list[Snapshot]], dict[str, str]]:
    """A study for Figures 12-15: a short first day (one round per query), then two full days
    of three rounds; a logged-in treatment that personalizes, a located one that does not;
    some pages shorter than 10 results (ranks empty on both pages are no results)."""
    study, today = "pers-figs", datetime.now(UTC).replace(hour=8, minute=0, second=0, microsecond=0)
    events, posted, categories = [], {}, {}
    for d, rounds in ((3, 1), (2, 3), (1, 3)):
        for r in range(rounds):
            for query, category in (("q news", "news"), ("q what", "what is")):
                size = 6 if r == 1 else 10
                base = [f"https://{category[:4]}{i}.example/" for i in range(size)]
                round_id = f"{study}-d{d}-r{r}-{category[:4]}"
                categories[round_id] = category
                for k, profile in enumerate(PROFILES):
                    urls = page(rng, base, 0.1, "noise")
                    if profile[2] == "logged_in":
                        urls = page(rng, urls, 0.4, "personal")
                    sent = today - timedelta(days=d) + timedelta(minutes=10 * r, milliseconds=5 * k)
                    event = snapshot(r, query, profile, urls, sent)
                    event["study_id"], event["round_id"], event["query_category"] = study, round_id, category
                    event["results"] = [
                        {"rank": i + 1, "type": "organic", "url": u} for i, u in enumerate(urls)
                    ]
                    events.append(event)
                    posted.setdefault(round_id, []).append(
                        Snapshot(profile[0], profile[1], profile[2], "ok", tuple(urls), sent)
                    )
    return events, posted, categories


def test_figures_12_to_15_sections(service: Service) -> None:
    """The series Figures 12-15 are drawn from, each equal to a recount of the posted pages:
    Figure 15 pools the personalized treatment and the others per rank beside the noise
    floor (the results at rank r as denominator), Figure 14 is the first full day's CDFs
    per category (or the --day given), Figures 12-13 are day pairs per profile and category."""
    events, posted, categories = figures_study(random.Random(15))
    assert service.post(events).status == 202
    study = "pers-figs"
    expect_pairs = sum(len(compare_round(s)) for s in posted.values())
    wait_for(
        lambda: (
            service.scalar(
                f"SELECT count() FROM personalization_pairs WHERE study_id = '{study}' AND links = 'organic'"
            )
            == expect_pairs
        ),
        60,
        "figure study compared",
    )
    args = ["report", "personalization", "--study", study, "--url", service.url, "--api-key", service.api_key]

    def report(*extra: str) -> dict[str, Any]:
        result = CliRunner().invoke(app, [*args, "--format", "json", "--links", "organic", *extra])
        assert result.exit_code == 0, result.output
        return orjson.loads(result.stdout)

    doc = report()
    groups = {r["treatment"]: r["personalized"] for r in doc["treatment_groups"]}
    assert groups == {"logged_in": 1, "location=Boston": 0}
    series = {"noise": "noise", "logged_in": "personalized", "location=Boston": "non_personalized"}
    recount: dict[tuple[str, int], list[bool]] = defaultdict(list)
    for snaps in posted.values():
        for c in compare_round(snaps):
            for rank, changed in enumerate(c.changed, 1):
                recount[series[c.treatment or "noise"], rank].append(changed)
    got = {(r["series"], r["rank"]): r for r in doc["by_rank_grouped"]}
    assert got.keys() == recount.keys()
    for key, changes in recount.items():
        assert got[key]["results"] == len(changes)
        assert got[key]["changed"] == pytest.approx(sum(changes) / len(changes), abs=1e-4)
    assert got["personalized", 8]["results"] < got["personalized", 1]["results"]  # short pages
    named = report("--personalized", "location=Boston")
    assert {r["series"] for r in named["by_rank_grouped"]} == {"noise", "personalized", "non_personalized"}
    assert {r["treatment"]: r["personalized"] for r in named["treatment_groups"]}["location=Boston"] == 1

    # the study's days from its own data, not the clock (midnight may pass during the test)
    first_day = min(s.sent_at for snaps in posted.values() for s in snaps).date()
    full_day = (first_day + timedelta(days=1)).isoformat()
    for day, doc_day in ((full_day, doc), (first_day.isoformat(), None)):
        rows = (doc_day or report("--day", day))["category_cdf"]
        assert {r["day"] for r in rows} == {day}
        for category in ("news", "what is"):
            pairs = [
                c
                for rid, snaps in posted.items()
                if categories[rid] == category and snaps[0].sent_at.date().isoformat() == day
                for c in compare_round(snaps)
                if c.kind == "treatment"
            ]
            edits = sorted(c.edit_distance for c in pairs)
            cdf = [r for r in rows if r["query_category"] == category and r["metric"] == "edit_distance"]
            assert [r["value"] for r in cdf] == sorted(set(edits))
            for r in cdf:
                assert r["cdf"] == pytest.approx(sum(e <= r["value"] for e in edits) / len(edits), abs=1e-4)

    firsts: dict[tuple[str, str, str], DayPage] = {}
    for rid, snaps in sorted(posted.items(), key=lambda kv: kv[1][0].sent_at, reverse=True):
        for s in snaps:  # the first page of each day wins: walk the rounds latest first
            firsts[s.profile_id, categories[rid], s.sent_at.date().isoformat()] = DayPage(
                s.sent_at.date(), s.urls
            )
    per_profile: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)
    per_category: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)
    for profile in {p for p, _, _ in firsts}:
        for category in ("news", "what is"):
            pages = [v for (p, c, _), v in firsts.items() if (p, c) == (profile, category)]
            for day, _, jaccard, edit in day_to_day(pages):
                per_profile[profile, day.isoformat()].append((jaccard, edit))
                per_category[category, day.isoformat()].append((jaccard, edit))
    wait_for(lambda: len(report()["consistency_days"]) == len(per_profile), 60, "consistency rows")
    doc = report()
    for name, key, want in (
        ("consistency_days", "profile_id", per_profile),
        ("consistency_category_days", "query_category", per_category),
    ):
        rows = {(r[key], r["day"]): r for r in doc[name]}
        assert rows.keys() == want.keys()
        for k, values in want.items():
            assert rows[k]["jaccard"] == pytest.approx(sum(j for j, _ in values) / len(values), abs=1e-4)
            assert rows[k]["edit_distance"] == pytest.approx(
                sum(e for _, e in values) / len(values), abs=0.01
            )
