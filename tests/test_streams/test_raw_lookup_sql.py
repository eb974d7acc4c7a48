"""The raw writer's lookup of a batch's event ids already stored, run on chDB."""

from __future__ import annotations

import uuid

import chdb

from streams.sinks.raw_writer import id_set_sql


def found(ids: list[str], stored: list[str]) -> list[str]:
    table = f"(SELECT toUUID(arrayJoin([{', '.join(repr(s) for s in stored)}])) AS event_id)"
    sql = f"SELECT toString(event_id) FROM {table} WHERE event_id IN ({id_set_sql(ids)}) ORDER BY 1"
    return str(chdb.query(sql, "CSV")).replace('"', "").split()


def test_canonical_ids_go_as_one_split_string_and_find_what_is_stored() -> None:
    stored = sorted(str(uuid.uuid4()) for _ in range(3))
    ids = [stored[0], str(uuid.uuid4()), stored[2]]
    assert "splitByChar" in id_set_sql(ids)
    assert found(ids, stored) == [stored[0], stored[2]]


def test_other_ids_are_quoted_one_by_one_and_compared_as_before() -> None:
    stored = [str(uuid.uuid4())]
    ids = [stored[0].upper(), "it's"]
    sql = id_set_sql(ids)
    assert "splitByChar" not in sql and "\\'" in sql
    assert id_set_sql([stored[0].upper()]) == f"'{stored[0].upper()}'"
    assert found([stored[0].upper()], stored) == stored
