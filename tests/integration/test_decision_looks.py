"""The decision line from stored looks: an imported study's complete days are looked at once,
stored, and equal a recount from the raw events; writing past days again forgets them."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from analytics.stats import sequential
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from tests.helpers import Service, report_json, run_own_process
from tests.integration.test_import import run_import

pytestmark = pytest.mark.integration

EXP = "looked-at"
START = datetime(2026, 10, 1, tzinfo=UTC)
DAYS = 6


def study(n: int, seed: int, days: int = DAYS, start: datetime = START) -> list[dict[str, Any]]:
    """``n`` events over ``days`` past days (planted effects: swap_1_2 lowers CTR_1)."""
    config = TrafficConfig(experiment_id=EXP, seed=seed, installs=300, today=START.date())
    traffic = ExtensionTraffic(config)
    out = []
    for i, event in enumerate(itertools.islice(traffic.events(), n)):
        moment = start + timedelta(seconds=i * days * 86400 // n)
        event["sent_at"] = moment.isoformat(timespec="milliseconds")
        out.append(event)
    return out


Bounds = dict[tuple[str, str], tuple[float, float]]


def recount_decisions(svc: Service) -> tuple[dict[str, str | None], Bounds]:
    """Per arm, the first day the sequence for delta_1 excluded zero, evaluated by hand on
    cumulative per-install counts read from the deduplicated raw events (not the slices)."""
    rows = svc.sql(
        "SELECT toString(toDate(received_at)) AS day, install_id, arm, count() AS units, "
        "countIf(element_type = 'organic' AND page_index = 0 AND original_rank = 1) AS c1 "
        f"FROM extension_events WHERE experiment_id = '{EXP}' AND engine = 'google' AND type = 'click' "
        "AND page_index = 0 AND identified AND dateDiff('day', install_day, toDate(received_at)) >= 4 "
        "GROUP BY day, install_id, arm ORDER BY day"
    )
    installs = sorted({r["install_id"] for r in rows})
    arms = sorted({r["arm"] for r in rows})
    at, col = {i: n for n, i in enumerate(installs)}, {a: n for n, a in enumerate(arms)}
    units, clicks = np.zeros((len(installs), len(arms))), np.zeros((len(installs), len(arms)))
    decided: dict[str, str | None] = {a: None for a in arms if a != "control"}
    bounds: dict[tuple[str, str], tuple[float, float]] = {}
    for day, group in itertools.groupby(rows, key=lambda r: r["day"]):
        for r in group:
            units[at[r["install_id"]], col[r["arm"]]] += r["units"]
            clicks[at[r["install_id"]], col[r["arm"]]] += r["c1"]
        seen = units.sum(axis=1) > 0
        base = sequential.ratio_influence(clicks[seen, col["control"], None], units[seen, col["control"]])
        for arm in decided:
            ratio = sequential.ratio_influence(clicks[seen, col[arm], None], units[seen, col[arm]])
            delta, infl, _, _ = sequential.gap_influence(*ratio, *base)
            low, high = sequential.interval(delta, infl)
            bounds[(day, arm)] = (float(low[0]), float(high[0]))
            if decided[arm] is None and (low[0] > 0 or high[0] < 0):
                decided[arm] = day
    return decided, bounds


def stored(svc: Service) -> list[dict[str, Any]]:
    return svc.sql(
        "SELECT toString(look_day) AS day, arm, delta_low, delta_high FROM agg_arrangement_looks FINAL "
        f"WHERE experiment_id = '{EXP}' AND engine = 'google' ORDER BY look_day, arm"
    )


def test_complete_days_are_looked_at_once_and_equal_a_recount(service: Service, tmp_path: Path) -> None:
    first = tmp_path / "first.jsonl"
    first.write_bytes(b"\n".join(orjson.dumps(e) for e in study(24_000, seed=5)))
    code, output = run_import(service, str(first))
    assert code == 0, output

    # the import stored every complete day's look (and the day they run through)
    looks = stored(service)
    days = sorted({r["day"] for r in looks})
    assert days[-1] == (START + timedelta(days=DAYS - 1)).date().isoformat()
    want, bounds = recount_decisions(service)
    for r in looks:
        if r["arm"]:
            assert (r["delta_low"], r["delta_high"]) == pytest.approx(bounds[(r["day"], r["arm"])], rel=1e-9)
    assert want["swap_1_2"] is not None  # the planted effect is found on some day

    doc = report_json(service, EXP, "--ranks", "3", "--intervals", "sequential")
    assert doc["decisions"] == want
    again = report_json(service, EXP, "--ranks", "3", "--intervals", "sequential")
    assert again["decisions"] == want and stored(service) == looks  # read, not recomputed

    # Re-importing the same file changes nothing; importing earlier days forgets the looks
    # and stores them anew from the new first day.
    code, output = run_import(service, str(first))
    assert code == 0, output
    assert stored(service) == looks
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_bytes(
        b"\n".join(orjson.dumps(e) for e in study(6_000, seed=6, days=2, start=START - timedelta(days=2)))
    )
    code, output = run_import(service, str(earlier))
    assert code == 0, output
    renewed = stored(service)
    assert renewed[0]["day"] == (START - timedelta(days=2)).date().isoformat()
    want, bounds = recount_decisions(service)
    for r in renewed:
        if r["arm"]:
            assert (r["delta_low"], r["delta_high"]) == pytest.approx(bounds[(r["day"], r["arm"])], rel=1e-9)
    assert report_json(service, EXP, "--ranks", "3", "--intervals", "sequential")["decisions"] == want

    # A quintile's bounds move with new data: its looks are evaluated over every day, never stored.
    quintile = report_json(
        service, EXP, "--ranks", "3", "--intervals", "sequential", "--subset", "n_candidates_q3"
    )
    assert set(quintile["decisions"]) == set(want)
    stored_selections = service.sql(
        f"SELECT DISTINCT selection FROM agg_arrangement_looks WHERE experiment_id = '{EXP}'"
    )
    assert stored_selections and all("n_candidates" not in r["selection"] for r in stored_selections)


def test_looks_extend_day_by_day_from_their_stored_totals() -> None:
    """Each new complete day's look is the stored totals plus that day's slices, and equals
    one pass over every day; a forget or lost totals start over from the first day, a
    calendar month per pass (tests/integration/helpers/looks_chdb.py)."""
    out = run_own_process("tests.integration.helpers.looks_chdb", "8000")
    assert out["reference_days"] == 11 and len(out["arms"]) == 5
    assert out["totals_equal"] and out["totals_rows"] > 100  # the totals = the days summed by hand
    nan = out["nan_looks"]  # an undefined sequence is stored as NaN, not as a [0, 0] interval
    assert nan["stored"] == nan["reference"] > 0 and nan["zero_stored"] == nan["zero_reference"]
    steps = out["steps"]
    for name, step in steps.items():
        assert step["equal"] and step["decisions_equal"], name
        # the latest totals, and those of the last three days before them
        assert step["totals_through"][-1] == step["through"], name
        oldest = date.fromisoformat(step["through"]) - timedelta(days=3)
        assert date.fromisoformat(step["totals_through"][0]) >= oldest, name
    # reads: "since..until(exclusive)", "+ totals" when the stored totals were read with them
    assert steps["first three days"]["reads"][0] == "2026-08-26..2026-08-29"
    assert steps["one more day"]["reads"][0] == "2026-08-29..2026-08-30 + totals"  # one day only
    assert steps["across the month's end"]["reads"][:2] == [
        "2026-08-30..2026-09-01 + totals",
        "2026-09-01..2026-09-03 + totals",
    ]
    scratch = ["2026-08-26..2026-09-01", "2026-09-01..2026-09-06 + totals"]  # a month per pass
    # a forget landed after the extension's read: it was done again, and nothing from its
    # day on was kept; the next call stored every day from scratch
    during = out["forget_during_extension"]
    assert during["last_look"] <= "2026-08-30" and during["totals_from_aug_31"] == 0
    # a forget took the totals of the looks it kept: the read finds no marker and starts over
    assert steps["every day"]["reads"] == ["2026-08-31..2026-09-01 + totals", *scratch]
    assert steps["after a forget from Aug 30"]["reads"] == ["2026-08-30..2026-09-01 + totals", *scratch]
    assert steps["after the totals were lost"]["reads"] == ["2026-09-03..2026-09-06 + totals", *scratch]
    assert steps["from scratch"]["reads"] == scratch
    assert any(day is not None for day in out["decided"].values())  # a decision to get right
