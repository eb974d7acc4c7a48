"""Issue 34: the worker's per-install statistics follow the batch, not the install's history
(closed days' sums, migration 0034), and every derived table still equals a recount from the
raw rows after each step of a study's life: an existing data directory upgraded, installs
returning day after day, a late event for an old day, a replayed batch, a set left
half-written by a crash, and an import of old events (``closed_sums_chdb``)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.helpers import run_own_process
from tests.integration.helpers.closed_sums_chdb import HISTORY_DAYS, LIVE_DAYS, START

pytestmark = pytest.mark.integration

TABLES = {
    "agg_arrangement_10s",
    "agg_arrangement_install",
    "agg_arrangement_install_subset",
    "agg_arrangement_install_closed",
    "clicks_by_rank_1m",
}


@pytest.mark.timeout(600)  # ~25 CPU-s of chDB recounts: beside two CPU burners it ran 294 s
def test_every_derived_table_equals_a_recount_after_each_step() -> None:
    out = run_own_process("tests.integration.helpers.closed_sums_chdb", "900", timeout=600)
    steps = ["upgrade", *(f"day {d}" for d in range(HISTORY_DAYS, HISTORY_DAYS + LIVE_DAYS))]
    steps += ["late event", "replay", "after a half-written set", "import"]
    for step in steps:
        differing = {table: n for table, n in out[step].items() if table != "plans"}
        assert differing.keys() >= TABLES, step
        assert not any(differing.values()), (step, differing)
    for step in ("upgrade", "import"):  # the per-hour replicate sums too, where imports write them
        assert "agg_arrangement_replicates_1h" in out[step], step

    # the upgrade gave every install of the history a set; each live day closed one more day
    assert out["upgrade_sets"] > 20
    assert len(out["throughs"]) >= LIVE_DAYS
    # an install new to the study gets its set once a day of its is closed, and keeps it moving
    last_boundary = START + timedelta(days=HISTORY_DAYS + LIVE_DAYS - 1)
    assert out["fresh install through"] == last_boundary.strftime("%Y-%m-%d %H:%M:%S")
    # so do the installs of a study that began after the upgrade, exactly
    assert not any(n for table, n in out["young"].items() if table != "plans"), out["young"]
    assert out["young sets"] == [last_boundary.strftime("%Y-%m-%d %H:%M:%S")] * 2 + ["8"]
    for day in range(HISTORY_DAYS, HISTORY_DAYS + LIVE_DAYS):
        plans = out[f"day {day}"]["plans"]
        assert plans.get("whole", 0) == 0 and plans["closed"] > 20, (day, plans)  # from closed sums
        assert plans["sets"] > 0  # advanced a day
    # an old day touched, a set not whole: that install alone recomputed whole, its set rebuilt
    assert out["late event"]["plans"] == {"whole": 1, "sets": 1}
    assert out["replay"]["plans"].get("whole", 0) == 0
    assert out["half-written set is whole"] == 0
    assert out["after a half-written set"]["plans"]["whole"] == 1
    # the import's installs are rebuilt (their sets were marked stale), once each
    assert out["import written"] == [66, 5]
    assert out["import"]["plans"]["whole"] == out["import"]["plans"]["sets"] > 0
