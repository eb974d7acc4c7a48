"""The guard's caps before and beside the tree walk: a statement over the size cap is refused
before it is parsed (sqlglot took ~25 s of CPU for 600 kB of ``1+1+...``), and the dictionary
functions are refused as one family (a list of names lagged behind the typed ``dictGet*``)."""

from __future__ import annotations

import pytest

from schemas.analyst_sql import MAX_STATEMENT_BYTES, check_statement_size, guard_analyst_sql
from schemas.sql import ReadOnlyViolation, StatementTooLarge

DICT_FAMILY = [
    "dictGet",
    "dictGetString",
    "dictGetUInt64",
    "dictGetFloat64",
    "dictGetDateTime",
    "dictGetUUID",
    "dictGetStringOrDefault",
    "dictGetOrDefault",
    "dictGetOrNull",
    "dictGetAll",
    "dictGetHierarchy",
    "dictGetChildren",
    "dictGetDescendants",
    "dictHas",
    "dictIsIn",
    "DICTGETSTRING",
    "`dictGetString`",
    '"dictGetUInt64"',
]


def refused(sql: str) -> bool:
    try:
        guard_analyst_sql(sql)
    except ReadOnlyViolation:
        return True
    return False


def test_every_dictionary_function_is_refused_as_scalar_and_as_table_function() -> None:
    let_through = [
        sql
        for name in DICT_FAMILY
        for sql in (
            f"SELECT {name}('users', 'name', toUInt64(1)) FROM alerts",
            f"SELECT count() FROM alerts WHERE {name}('geo', 'parent', 1, 2) = 0",
            f"SELECT * FROM {name}('users')",
        )
        if not refused(sql)
    ]
    assert not let_through
    # a name is not a function: columns and aliases that start with "dict" still read
    assert guard_analyst_sql("SELECT 1 AS dictionary_size") == "SELECT 1 AS dictionary_size"


def test_a_statement_over_the_cap_is_refused_before_it_is_parsed() -> None:
    oversized = "SELECT " + "+".join(["1"] * 300_000)  # ~600 kB: ~25 s of parsing before
    with pytest.raises(StatementTooLarge, match="at most 262144"):
        guard_analyst_sql(oversized)
    with pytest.raises(StatementTooLarge, match="at most 1000"):
        guard_analyst_sql("SELECT " + "1" * 1000, max_bytes=1000)
    assert guard_analyst_sql("SELECT 1", max_bytes=8) == "SELECT 1"


def test_the_cap_counts_utf8_bytes_and_is_clickhouses_own() -> None:
    assert MAX_STATEMENT_BYTES == 262_144  # ClickHouse's default max_query_size
    check_statement_size("x" * MAX_STATEMENT_BYTES)
    with pytest.raises(StatementTooLarge):
        check_statement_size("x" * (MAX_STATEMENT_BYTES + 1))
    under_in_characters = "SELECT '" + "é" * 140_000 + "'"  # 140,009 characters, 280,009 bytes
    with pytest.raises(StatementTooLarge, match="280009 bytes"):
        check_statement_size(under_in_characters)
    assert issubclass(StatementTooLarge, ReadOnlyViolation)  # a refusal like the others
