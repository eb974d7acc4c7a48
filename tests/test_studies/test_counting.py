"""What counts is written once (``studies/arrangement/counting.py``): every statement of the
write side builds on it, and the data migrations that backfilled positions (0019, 0027;
history, run only on data directories older than them) restate it word for word, as the
recount of issue 37 (0039: first pages only, an SSR between c1 and c2, the ``ads`` subset)
restates today's rules."""

from __future__ import annotations

import re
from pathlib import Path

from analytics.stats.arrangement_subsets import subsets_array_sql
from studies.arrangement import counting
from studies.arrangement.counting import ELEMENT_CLICKS, click_at, organic_click_at, touched_slices
from studies.arrangement.write import clicks_by_rank, hourly_replicates, slice_rows

MIGRATIONS = Path(__file__).resolve().parents[2] / "schemas" / "clickhouse" / "migrations"
POSITION = re.compile(r"countIf\(([^()]*original_rank = (\d+))\)")


def test_the_write_side_counts_by_the_rules() -> None:
    keys = [("e", "google", 1_700_000_000)]
    slices, minute = slice_rows.slices_sql(keys), clicks_by_rank.recompute_sql(keys)
    hourly = hourly_replicates.install_hours_sql("1", 0, 3600)
    for r in range(1, 11):
        assert f"countIf({organic_click_at(r)})" in slices and f"countIf({organic_click_at(r)})" in hourly
        assert f"countIf({click_at(r)})" in minute
    assert all(f"countIf({rule})" in slices for rule in ELEMENT_CLICKS.values())
    assert touched_slices(keys)[:2] == (1_700_000_000, 1_700_000_010)


def test_the_backfills_restate_the_rules_word_for_word() -> None:
    found = 0
    for path in sorted(MIGRATIONS.glob("*.sql")):
        for condition, rank in POSITION.findall(path.read_text()):
            assert condition in (organic_click_at(int(rank)), click_at(int(rank))), (path.name, condition)
            found += 1
    assert found >= 30  # 0019 (both aggregates) and 0027, c_1..c_10 each


def test_the_recount_of_issue_37_restates_todays_rules() -> None:
    (recount,) = MIGRATIONS.glob("0039_*.sql")
    text = recount.read_text()
    rules = [counting.UNIT, counting.IMPRESSION, counting.LATER_UNIT, counting.LATER_IMPRESSION]
    for rule in [*rules, *ELEMENT_CLICKS.values()]:
        assert f"countIf({rule})" in text, rule
    assert f"toUInt8({counting.SSR_C1_C2}) AS ssr12" in text
    assert subsets_array_sql() in text and "('ads', toUInt8(ads_present = 1))" in text
