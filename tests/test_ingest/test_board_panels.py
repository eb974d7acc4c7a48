"""The board's data assembly: pure functions over query rows, checked by hand and against
the report functions they must agree with."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from analytics.stats.srm import srm_test
from core.store import StoreUnavailable
from ingest.board import panels, queries
from studies.arrangement.answers import figure3_json, flatten
from studies.arrangement.read.report import element_share_rows, table_from_rows
from studies.arrangement.selection import ReportQuery
from studies.arrangement.tables import BOX_BASELINE


def per_install_rows() -> list[dict]:
    """Six installs, three arms; clicks on c1..c3."""
    rows = []
    for i in range(6):
        install = f"install-{i}"
        rows.append({"install_id": install, "arm": "control", "n_units": 10, "n_clicks": [4 + i % 2, 2, 1]})
        rows.append({"install_id": install, "arm": "swap_1_2", "n_units": 5, "n_clicks": [1, 2, i % 2]})
        if i < 3:
            rows.append({"install_id": install, "arm": "hide_ads_box", "n_units": 4, "n_clicks": [2, 1, 0]})
    return rows


@pytest.mark.parametrize(
    ("crawl_id", "prefix"),
    [
        ("mystudy-202611211200", "mystudy-"),
        ("ac-e2e-google-r0003", "ac-e2e-google-"),
        ("plain", "plain"),
        ("-x", "-x"),
    ],
)
def test_study_prefix_is_the_id_up_to_its_last_dash(crawl_id: str, prefix: str) -> None:
    assert panels.study_prefix(crawl_id) == prefix
    assert crawl_id.startswith(prefix)


@pytest.mark.parametrize(
    ("crawl_id", "prefix"),
    [
        ("realac-20261127T125015Z-a1b2", "realac-"),
        ("my-study.v2-20261127T125016Z-00ff", "my-study.v2-"),
        ("ac-20261127T125017Z-9c3e", "ac-"),
    ],
)
def test_the_study_of_a_crawl_id_the_crawler_made_is_its_study_name(crawl_id: str, prefix: str) -> None:
    """Issue 40: ``<study>-<UTC>-<hex>`` was cut at its last '-', one study per round."""
    from collectors.autocomplete.runner import new_crawl_id

    assert panels.study_prefix(crawl_id) == prefix
    assert panels.study_prefix(new_crawl_id(study="my-study.v2")) == "my-study.v2-"


def crawl_row(crawl_id: str, engine: str, completed_at: str, roots: int = 2, fetched: int = 2) -> dict:
    return {
        "crawl_id": crawl_id,
        "engine": engine,
        "roots": roots,
        "fetched_roots": fetched,
        "completed_at": completed_at,
    }


def test_autocomplete_index_groups_rounds_by_study_newest_first() -> None:
    crawls = [
        crawl_row("old-g-r0001", "google", "2026-01-01 00:00:00", roots=4, fetched=4),
        crawl_row("new-r0001", "bing", "2026-02-01 00:00:00"),
        crawl_row("new-r0002", "google", "2026-02-02 00:00:00"),
    ]
    assert panels.autocomplete_index(crawls) == [
        {
            "study": "new-",
            "rounds": 2,
            "rounds_with_data": 2,
            "engines": ["bing", "google"],
            "last": "2026-02-02 00:00:00",
        },
        {
            "study": "old-g-",
            "rounds": 1,
            "rounds_with_data": 1,
            "engines": ["google"],
            "last": "2026-01-01 00:00:00",
        },
    ]


def test_autocomplete_index_counts_a_round_once_and_only_rounds_that_fetched_as_data() -> None:
    """Three rounds of ``--study realac`` are one study of three rounds (on two engines, still
    three), and a round whose every root failed is a round without data."""
    crawls = [
        crawl_row("realac-20261127T125015Z-a1b2", "google", "2026-11-27 12:50:20"),
        crawl_row("realac-20261127T125015Z-a1b2", "bing", "2026-11-27 12:50:21"),
        crawl_row("realac-20261127T125016Z-0c0d", "google", "2026-11-27 12:50:22"),
        crawl_row("realac-20261127T125017Z-e5f6", "google", "2026-11-27 12:50:23", fetched=0),
    ]
    (study,) = panels.autocomplete_index(crawls)
    assert (study["study"], study["rounds"], study["rounds_with_data"]) == ("realac-", 3, 2)
    assert study["engines"] == ["bing", "google"]


def test_experiment_index_merges_data_and_registry() -> None:
    activity = [
        {"experiment_id": "a", "engines": ["google"], "units": 10, "last_day": "2026-01-02"},
        {"experiment_id": "b", "engines": ["bing"], "units": 5, "last_day": "2026-01-03"},
    ]
    registry = [
        {"experiment_id": "a", "status": "running", "engines": ["bing", "google"]},
        {"experiment_id": "c", "status": "stopped", "engines": ["google"]},
    ]
    got = panels.experiment_index(activity, registry)
    assert [e["experiment_id"] for e in got] == ["b", "a", "c"]  # most recent data first
    a = got[1]
    assert a == {
        "experiment_id": "a",
        "engines": ["bing", "google"],
        "units": 10,
        "last_day": "2026-01-02",
        "registered": True,
        "status": "running",
    }
    assert got[0]["registered"] is False and got[2]["units"] == 0


def figure3_panel(rows: list[dict[str, Any]], ranks: int, seed: int, baseline: str) -> dict[str, Any]:
    """The board's Figure-3 panel for per-install rows, as the experiment route draws it."""
    return figure3_json(table_from_rows(rows, ranks, seed, baseline) if rows else [], ranks, baseline)


def shares_panel(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return panels.shares_json(element_share_rows(rows))


def test_figure3_panel_has_the_reports_numbers() -> None:
    rows = per_install_rows()
    got = figure3_panel(rows, ranks=3, seed=0, baseline="control")
    report = {r["arm"]: r for r in flatten(table_from_rows(rows, 3, 0, "control"))}
    assert [a["arm"] for a in got["arms"]] == ["control", "hide_ads_box", "swap_1_2"]
    for arm in got["arms"]:
        want = report[arm["arm"]]
        assert (arm["units"], arm["installs"]) == (want["units"], want["installs"])
        for i in range(3):
            assert arm["ctr"][i]["value"] == want[f"ctr_c{i + 1}"]
            assert arm["ctr"][i]["ci_low"] == want[f"ctr_c{i + 1}_ci_low"]
            if arm["arm"] != "control":
                assert arm["delta"][i]["value"] == want[f"delta_c{i + 1}"]
                assert arm["beta"][i]["ci_high"] == want[f"beta_c{i + 1}_ci_high"]
    control = got["arms"][0]
    assert control["units"] == 60 and control["ctr"][0]["value"] == pytest.approx(27 / 60, abs=1e-6)
    assert control["delta"] == []
    deltas = [-a["delta"][0]["value"] for a in got["arms"][1:]]  # the theorem's sign: control - arm
    assert got["performative_power_lower_bound"] == pytest.approx(max(deltas), abs=1e-6)
    assert got["has_baseline"] is True


def test_box_panel_takes_gaps_against_hide_ads_box_and_says_when_it_is_missing() -> None:
    rows = per_install_rows()
    box = figure3_panel(rows, 3, 0, BOX_BASELINE)
    assert box["arms"][0]["arm"] == "hide_ads_box" and box["arms"][0]["delta"] == []
    assert all(a["delta"] for a in box["arms"][1:])
    assert box["performative_power_lower_bound"] is None  # defined against control only

    without = figure3_panel([r for r in rows if r["arm"] != "hide_ads_box"], 3, 0, "hide_ads_box")
    assert without["has_baseline"] is False and all(a["delta"] == [] for a in without["arms"])
    assert figure3_panel([], 3, 0, "control")["arms"] == []


def test_shares_drops_and_totals() -> None:
    counts = [{"arm": "control", "organic": 6, "ad": 2, "shopping_box": 1, "ssr": 0, "other": 1}]
    shares = shares_panel(counts)
    assert shares == [
        {
            "arm": "control",
            "organic": 0.6,
            "ad": 0.2,
            "shopping_box": 0.1,
            "ssr": 0.0,
            "other": 0.1,
            "clicks": 10,
        }
    ]
    assert shares[0] == element_share_rows(counts)[0]  # the report's shares, as the CLI prints them
    empty = shares_panel([{"arm": "x", "organic": 0, "ad": 0, "shopping_box": 0, "ssr": 0, "other": 0}])
    assert empty[0]["organic"] is None and empty[0]["clicks"] == 0

    drops = panels.drops_panel(
        [{"arm": "control", "all_units": 100, "burn_in_dropped": 7, "unidentified_dropped": 3}]
    )
    assert drops == [
        {"arm": "control", "all_units": 100, "burn_in_dropped": 7, "unidentified_dropped": 3, "kept": 90}
    ]


def drops(**kept: int) -> list[dict]:
    return [
        {"arm": a, "all_units": n + 5, "burn_in_dropped": 4, "unidentified_dropped": 1, "kept": n}
        for a, n in kept.items()
    ]


def test_srm_panel_tests_kept_units_against_the_allocation() -> None:
    fair = panels.srm_panel(drops(control=500, swap_1_2=510), {"control": 1, "swap_1_2": 1}, [])
    want = srm_test({"control": 500, "swap_1_2": 510}, {"control": 1, "swap_1_2": 1})
    assert fair["status"] == "ok" and fair["registered"] is True
    assert fair["p_value"] == pytest.approx(want.p_value) and fair["chi2"] == pytest.approx(want.chi2)
    assert fair["units"] == 1010
    assert fair["arms"][0] == {
        "arm": "control",
        "units": 500,
        "share": pytest.approx(500 / 1010, abs=1e-6),
        "expected_share": 0.5,
    }

    skewed = panels.srm_panel(drops(control=6000, swap_1_2=4000), {"control": 1, "swap_1_2": 1}, [])
    assert skewed["status"] == "mismatch" and skewed["p_value"] < skewed["alpha"]

    missing_arm = panels.srm_panel(drops(control=10), {"control": 3, "swap_1_2": 1}, [])
    assert [a["arm"] for a in missing_arm["arms"]] == ["control", "swap_1_2"]
    assert missing_arm["arms"][1]["units"] == 0 and missing_arm["arms"][1]["expected_share"] == 0.25

    alert = {
        "alert_id": "x",
        "created_at": "2026-01-01 00:00:00.000",
        "kind": "srm",
        "details": '{"chi2": 40}',
    }
    alerted = panels.srm_panel(drops(control=500, swap_1_2=510), {"control": 1, "swap_1_2": 1}, [alert])
    assert alerted["status"] == "alert" and alerted["alerts"][0]["details"] == {"chi2": 40}

    unregistered = panels.srm_panel(drops(control=5, swap_1_2=9), None, [])
    assert unregistered["status"] == "unregistered" and unregistered["p_value"] is None
    assert unregistered["arms"][1]["expected_share"] is None

    nothing = panels.srm_panel([], {"control": 1, "swap_1_2": 1}, [])
    assert nothing["status"] == "no_units" and nothing["arms"][0]["share"] is None


def test_churn_panel_is_a_depth_by_rank_grid_per_engine() -> None:
    rows = [
        {"engine": "google", "rank": 1, "depth": 0, "mean_churn": 0.25, "pairs": 4},
        {"engine": "google", "rank": 2, "depth": 0, "mean_churn": 0.5, "pairs": 4},
        {"engine": "google", "rank": 1, "depth": 1, "mean_churn": 1.0, "pairs": 2},
        {"engine": "bing", "rank": 1, "depth": 0, "mean_churn": 0.0, "pairs": 1},
    ]
    got = panels.churn_panel(rows)
    assert [g["engine"] for g in got] == ["bing", "google"]
    google = got[1]
    assert google["ranks"] == [1, 2] and google["depths"] == [0, 1]
    assert google["churn"] == [[0.25, 0.5], [1.0, None]]
    assert google["pairs"] == [[4, 4], [2, None]]


def test_nmi_panel_orders_rounds_and_reads_shocks() -> None:
    details = orjson.dumps({"roots": ["a", "b", "c"], "roots_evaluated": 4}).decode()
    rows = [
        {
            "engine": "google",
            "crawl_id": "s-r2",
            "completed_at": "2026-01-03 00:00:00.000",
            "roots": 4,
            "mean_nmi": 0.1,
            "min_nmi": 0.02,
            "shock": 1,
            "shock_details": details,
        },
        {
            "engine": "google",
            "crawl_id": "s-r1",
            "completed_at": "2026-01-02 00:00:00.000",
            "roots": 4,
            "mean_nmi": 0.9,
            "min_nmi": None,
            "shock": 0,
            "shock_details": "",
        },
    ]
    (series,) = panels.nmi_panel(rows)
    assert [p["crawl_id"] for p in series["rounds"]] == ["s-r1", "s-r2"]
    first, shock = series["rounds"]
    assert first["shock"] is False and first["shock_details"] is None and first["min_nmi"] is None
    assert shock["shock"] is True and shock["shock_details"]["roots"] == ["a", "b", "c"]


def test_personalization_panel_groups_ranks_by_treatment() -> None:
    by_rank = [
        {"treatment": "logged_in", "rank": 2, "changed": 0.5, "noise": 0.1, "personalization": 0.4},
        {"treatment": "logged_in", "rank": 1, "changed": 0.2, "noise": 0.0, "personalization": 0.2},
        {"treatment": "location=CA", "rank": 1, "changed": 0.3, "noise": 0.0, "personalization": 0.3},
    ]
    rounds = [{"rounds": 3, "complete": 3, "incomplete": 0, "waiting": 0, "skew_ms_median": 1.0}]
    got = panels.personalization_panel(by_rank, rounds)
    assert [t["treatment"] for t in got["treatments"]] == ["location=CA", "logged_in"]
    assert [p["rank"] for p in got["treatments"][1]["ranks"]] == [1, 2]
    assert got["rounds"]["complete"] == 3
    none = panels.personalization_panel([], [{"rounds": 0, "skew_ms_median": math.nan}])
    assert none == {"treatments": [], "rounds": None}


def test_alerts_newest_first() -> None:
    rows = [
        {"created_at": "2026-01-01 00:00:00.000", "kind": "a"},
        {"created_at": "2026-01-02 00:00:00.000", "kind": "b"},
    ]
    assert [a["kind"] for a in panels.alerts_panel(rows)] == ["b", "a"]


def test_experiment_statements_are_the_reports() -> None:
    query = ReportQuery("exp'1", "bing", burn_in_days=2)
    got = queries.experiment_sql(query)
    assert got["per_install"] == query.per_install_sql()
    assert got["drops"] == query.drops_sql() and got["shares"] == query.element_shares_sql()
    assert "subset = 'box'" in got["box_per_install"] and "install_age_days >= 2" in got["box_per_install"]
    assert "subject = 'exp\\'1/bing'" in got["srm_alerts"]
    assert "startsWith(crawl_id, 'st-')" in queries.autocomplete_sql("st-")["churn"]
    assert "LIMIT 7" in queries.alerts_sql(7)


async def until(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Wait for ``condition`` (polled), failing after ``timeout_s``."""
    import asyncio

    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.005)  # wait-ok: poll interval under a deadline

    await asyncio.wait_for(poll(), timeout_s)


async def test_refresher_serves_every_request_from_one_background_computation() -> None:
    """Many requests for one panel: one computation; later requests get the cached answer
    at once while the task refreshes it; an error keeps the last good answer."""
    import asyncio

    from ingest.board.compute import Panel
    from ingest.board.refresher import BoardRefresher, BoardUnavailable

    calls: list[Panel] = []
    fail = [False]
    gate = asyncio.Event()

    async def compute(panel: Panel) -> int:
        calls.append(panel)
        await gate.wait()
        if fail[0]:
            raise StoreUnavailable("down")
        return len(calls)

    refresher = BoardRefresher(compute, interval_s=0.05, keep_s=60)
    panel = Panel("alerts", (("limit", 5),))
    waiting = [asyncio.create_task(refresher.get(panel)) for _ in range(20)]
    await until(lambda: len(calls) >= 1)
    assert len(calls) == 1 and not any(t.done() for t in waiting)  # the first computation
    gate.set()
    assert await asyncio.gather(*waiting) == [1] * 20
    await until(lambda: len(calls) >= 3)  # the task recomputes in the background...
    gate.clear()  # ...and while a refresh hangs, requests still answer from the cache at once
    assert await asyncio.wait_for(refresher.get(panel), 0.5) >= 1
    fail[0] = True
    failed_from = refresher.computations
    gate.set()
    await until(lambda: refresher.computations > failed_from + 1)  # a failed refresh has run
    assert isinstance(await refresher.get(panel), int)  # the last good answer, not the error

    other = Panel("index")
    try:
        await asyncio.wait_for(refresher.get(other), 2)
    except BoardUnavailable as exc:  # never computed and the store is down: say so
        assert exc.store_down
    else:
        raise AssertionError("expected BoardUnavailable")
    await refresher.close()


async def test_refresher_forgets_panels_nobody_looks_at() -> None:

    from ingest.board.compute import Panel
    from ingest.board.refresher import BoardRefresher

    now = [0.0]
    computed: list[str] = []

    async def compute(panel: Panel) -> str:
        computed.append(panel.kind)
        return panel.kind

    refresher = BoardRefresher(compute, interval_s=0.01, keep_s=10, max_panels=2, clock=lambda: now[0])
    assert await refresher.get(Panel("index")) == "index"
    now[0] = 11  # nobody asked for the index for longer than keep_s
    assert await refresher.get(Panel("alerts")) == "alerts"
    await until(lambda: Panel("index") not in refresher._entries)
    assert Panel("index") not in refresher._entries and Panel("alerts") in refresher._entries
    await refresher.close()


async def test_refresher_refreshes_the_index_less_often() -> None:
    """The list of studies is refreshed every ``slower`` seconds, the other panels every
    interval."""
    from ingest.board.compute import Panel
    from ingest.board.refresher import BoardRefresher

    now = [0.0]
    computed: list[str] = []

    async def compute(panel: Panel) -> str:
        computed.append(panel.kind)
        return panel.kind

    refresher = BoardRefresher(
        compute, interval_s=0.01, keep_s=100, clock=lambda: now[0], slower={"index": 10.0}
    )
    assert await refresher.get(Panel("index")) == "index"
    assert await refresher.get(Panel("alerts")) == "alerts"
    for moment in (3.0, 6.0, 9.0):
        now[0] = moment
        seen = computed.count("alerts")
        await until(lambda seen=seen: computed.count("alerts") > seen)
        assert await refresher.get(Panel("index")) == "index"
    assert computed.count("index") == 1  # 9 s after its first computation: not yet
    now[0] = 10.5
    await until(lambda: computed.count("index") == 2)
    assert computed.count("index") == 2
    await refresher.close()


async def test_refresher_backs_off_a_panel_whose_answer_does_not_change() -> None:
    """An unchanged answer doubles the panel's interval up to ``quiet_s``; a changed one
    brings it back to its own (so a quiet study costs the store little, a live one keeps
    its 2 s)."""
    from ingest.board.compute import Panel
    from ingest.board.refresher import BoardRefresher

    now = [0.0]
    answer = ["first"]
    computed: list[float] = []

    async def compute(panel: Panel) -> str:
        computed.append(now[0])
        return answer[0]

    refresher = BoardRefresher(
        compute, interval_s=0.01, keep_s=1000, clock=lambda: now[0], slower={"alerts": 2.0}, quiet_s=10.0
    )
    assert await refresher.get(Panel("alerts")) == "first"

    async def at(moment: float, refreshed: bool) -> None:
        now[0] = moment
        seen, rounds = len(computed), refresher.rounds
        if refreshed:
            await until(lambda: len(computed) > seen)
        else:  # two whole rounds at this moment, and no computation
            await until(lambda: refresher.rounds >= rounds + 2)
        assert (computed[-1] == moment) is refreshed, (moment, computed)

    # unchanged answers: 2 s, then 4, 8, and 10 at most
    for moment, refreshed in ((1.9, False), (2.0, True), (5.9, False), (6.0, True), (13.9, False)):
        await at(moment, refreshed)
    for moment, refreshed in ((14.0, True), (23.9, False), (24.0, True), (33.9, False), (34.0, True)):
        await at(moment, refreshed)
    answer[0] = "second"  # the study moved: seen at the next refresh, then every 2 s again
    await at(44.0, True)
    assert await refresher.get(Panel("alerts")) == "second"
    await at(46.0, True)
    await at(49.9, False)  # unchanged at 46: 4 s
    await at(50.0, True)
    await refresher.close()


async def test_a_panel_failing_the_same_way_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    """It is retried every round (so it recovers at once), but its traceback was logged
    every 2 s for as long as the board was open."""
    from ingest.board.compute import Panel
    from ingest.board.refresher import BoardRefresher, BoardUnavailable

    failure = ["ValueError"]
    tries: list[int] = []

    async def compute(panel: Panel) -> str:
        tries.append(1)
        if failure[0] == "ValueError":
            raise ValueError("stored config refused")
        if failure[0] == "KeyError":
            raise KeyError("other")
        return "fine"

    refresher = BoardRefresher(compute, interval_s=0.01, keep_s=1000)
    with caplog.at_level(logging.ERROR, logger="ingest.board.refresher"):
        with pytest.raises(BoardUnavailable):
            await refresher.get(Panel("alerts"))
        await until(lambda: len(tries) >= 5)  # retried round after round
        assert len([r for r in caplog.records if "failed" in r.getMessage()]) == 1
        failure[0] = "KeyError"  # failing another way is news: logged
        seen = len(tries)
        await until(lambda: len(tries) >= seen + 3)
        assert len([r for r in caplog.records if "failed" in r.getMessage()]) == 2
        failure[0] = "fine"
        seen = len(tries)
        await until(lambda: len(tries) > seen)
        assert await refresher.get(Panel("alerts")) == "fine"
    await refresher.close()


def test_srm_panel_counts_kept_clicks_whatever_the_unit_mode() -> None:
    """In impression mode the drops count shown pages, but the SRM check counts click units:
    the panel tests those, as the worker's check does."""
    rows = [
        {
            "arm": "control",
            "all_units": 9000,
            "burn_in_dropped": 100,
            "unidentified_dropped": 0,
            "kept_clicks": 500,
        },
        {
            "arm": "swap_1_2",
            "all_units": 3000,
            "burn_in_dropped": 50,
            "unidentified_dropped": 0,
            "kept_clicks": 510,
        },
    ]
    drops = panels.drops_panel(rows)
    assert [d["kept"] for d in drops] == [8900, 2950]
    panel = panels.srm_panel(drops, {"control": 1, "swap_1_2": 1}, [])
    want = srm_test({"control": 500, "swap_1_2": 510}, {"control": 1, "swap_1_2": 1})
    assert panel["units"] == 1010 and panel["status"] == "ok"
    assert panel["p_value"] == pytest.approx(want.p_value)
