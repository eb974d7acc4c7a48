"""The erasure's SQL, run on chDB: the dead letters of an install, and the raw writer's
lookup of a batch's events of erased installs."""

from __future__ import annotations

import chdb

from schemas.erased_installs import erased_lookup_sql, install_hash
from streams.erasure import dead_letter_match


def rows(sql: str) -> list[str]:
    return [line.strip('"') for line in str(chdb.query(sql, "CSV")).split()]


def test_dead_letters_of_an_install_are_matched_by_its_id_as_ingest_writes_it() -> None:
    table = (
        "SELECT * FROM values('topic String, payload String', "
        '(\'auditstream.extension\', \'{"install_id":"abcdefgh1","x":1}\'), '
        "('auditstream.panel', '{\"install_id\":\"abcdefgh1\"}'), "
        "('auditstream.extension', '{\"install_id\":\"abcdefgh12\"}'), "
        "('auditstream.serp', '{\"install_id\":\"abcdefgh1\"}'))"
    )
    found = rows(f"SELECT topic FROM ({table}) WHERE {dead_letter_match('abcdefgh1')}")
    assert found == ["auditstream.extension", "auditstream.panel"]


def test_the_lookup_finds_the_events_of_erased_installs_only() -> None:
    events = [
        {"event_id": "e1", "install_id": "install-a"},
        {"event_id": "e2", "install_id": "install-b"},
        {"event_id": "e3", "install_id": "install-a"},
        {"event_id": "e4"},  # no install: never found
    ]
    (sql,) = erased_lookup_sql(events)
    erased = f"SELECT '{install_hash('install-a')}'"
    assert rows(sql.replace("SELECT install_hash FROM erased_installs", erased)) == ["e1", "e3"]


def test_the_lookup_is_chunked_inside_max_query_size() -> None:
    events = [{"event_id": f"{i:036d}", "install_id": f"{i:064d}"} for i in range(5000)]
    queries = erased_lookup_sql(events)
    assert len(queries) == 3 and all(len(q) < 256 * 1024 for q in queries)
    assert erased_lookup_sql([]) == []


def test_ids_holding_a_comma_go_as_arrays_with_the_same_answer() -> None:
    events = [
        {"event_id": "e,1", "install_id": "install-a"},
        {"event_id": "e2", "install_id": "install-b"},
    ]
    (sql,) = erased_lookup_sql(events)
    assert "splitByChar" not in sql
    erased = f"SELECT '{install_hash('install-a')}'"
    assert rows(sql.replace("SELECT install_hash FROM erased_installs", erased)) == ["e,1"]
