"""An export's tables are paged by their keys: the condition after a key, the cursor a page
leaves, the cursors refused; and every table is documented in schemas/clickhouse/README.md."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.export_tables import (
    KINDS,
    MAX_CURSOR_TEXT,
    BadCursor,
    ExportTable,
    after_condition,
    next_after,
    page_sql,
)
from schemas.table_docs import doc_of

TABLE = ExportTable("t", "raw FINAL", ("engine", "received_at", "event_id"))


def test_the_condition_after_a_key_is_written_out_column_by_column() -> None:
    assert after_condition(("a", "b"), ["x", 3]) == "((a > 'x') OR (a = 'x' AND b > 3))"


def test_a_page_reads_the_study_after_the_cursor_in_key_order() -> None:
    kind = KINDS["autocomplete"]
    sql = page_sql(kind, TABLE, "ac-", ["google", "2026-10-01 08:00:00.350", "7d5f"], 500)
    assert sql == (
        "SELECT * FROM raw FINAL WHERE startsWith(crawl_id, 'ac-') AND ((engine > 'google') OR "
        "(engine = 'google' AND received_at > '2026-10-01 08:00:00.350') OR (engine = 'google' AND "
        "received_at = '2026-10-01 08:00:00.350' AND event_id > '7d5f')) "
        "ORDER BY engine, received_at, event_id LIMIT 500"
    )
    first = page_sql(KINDS["personalization"], TABLE, "it's", None, 10)
    assert "WHERE study_id = 'it\\'s' ORDER BY" in first


@pytest.mark.parametrize(
    "after",
    [
        ["google", "2026-10-01"],  # too short
        ["google", "2026-10-01", "x", "y"],
        ["google", 1.5, "x"],  # a float is no key value
        ["google", True, "x"],
        ["google", None, "x"],
        ["google", ["a"], "x"],
        ["google", "x" * (MAX_CURSOR_TEXT + 1), "x"],
        {"engine": "google"},
        "google",
    ],
)
def test_a_cursor_that_is_not_a_key_is_refused(after: Any) -> None:
    with pytest.raises(BadCursor):
        page_sql(KINDS["arrangement"], TABLE, "exp", after, 10)


def test_a_hostile_cursor_stays_a_literal() -> None:
    sql = page_sql(KINDS["arrangement"], TABLE, "exp", ["x' OR 1=1 --", "\\'", "y"], 10)
    assert "'x\\' OR 1=1 --'" in sql and "'\\\\\\''" in sql


def test_the_cursor_after_a_page_is_its_last_key_unless_it_was_the_last_page() -> None:
    columns = ["event_id", "engine", "received_at", "n"]
    rows = [["e1", "bing", "2026-10-01 08:00:00.000", 1], ["e2", "google", "2026-10-01 09:00:00.000", 2]]
    assert next_after(TABLE, columns, rows, 2) == ["google", "2026-10-01 09:00:00.000", "e2"]
    assert next_after(TABLE, columns, rows, 3) is None
    assert next_after(TABLE, columns, [], 2) is None


def test_every_table_of_every_kind_is_documented_and_named_once() -> None:
    for kind in KINDS.values():
        names = [t.name for t in kind.tables]
        assert len(names) == len(set(names)), kind.name
        assert kind.event_tables and kind.result_tables
        for table in kind.tables:
            assert doc_of(table.documented_as), (kind.name, table.name)
            assert len(set(table.key)) == len(table.key), table.name
