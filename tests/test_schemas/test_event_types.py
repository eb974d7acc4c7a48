"""Every row of the event-type table (schemas/event_types.py) is wired end to end: the
model answers to its name, the family's topic exists, its raw table is created by the
migrations with the columns the worker routes on, and extension types carry no field
the privacy rules forbid. (Through the running service, every type is also posted,
accepted and found in its raw table by tests/integration/test_fuzz.py.)"""

from __future__ import annotations

import re
from typing import get_args

import pytest
from pydantic import TypeAdapter

from schemas.event_types import BY_NAME, EVENT_MODELS, EVENT_TYPES, EXTENSION_TYPES, AnyEvent, types_of
from schemas.events import PRIVACY_FORBIDDEN_FIELDS
from schemas.sql import load_migrations
from schemas.topics import FAMILIES, all_topics


def raw_columns(table: str) -> set[str]:
    columns: set[str] = set()
    for migration in load_migrations():
        for statement in migration.statements:
            created = re.match(rf"CREATE TABLE IF NOT EXISTS {table}\s*\((.*)\)\s*ENGINE", statement, re.S)
            if created:
                columns |= {line.split()[0] for line in created.group(1).splitlines() if line.strip()}
            columns |= set(re.findall(rf"ALTER TABLE {table} ADD COLUMN (?:IF NOT EXISTS )?(\w+)", statement))
    return columns


@pytest.mark.parametrize("row", EVENT_TYPES, ids=lambda r: r.name)
def test_each_event_type_is_wired(row) -> None:  # type: ignore[no-untyped-def]
    assert get_args(row.model.model_fields["type"].annotation) == (row.name,)
    assert row.family.topic("auditstream") in all_topics("auditstream")
    columns = raw_columns(row.family.raw_table)
    assert columns, f"no migration creates {row.family.raw_table}"
    assert set(row.family.required) <= set(row.model.model_fields), "the worker routes on model fields"
    assert set(row.family.required) <= columns
    assert {"event_id", "type", "sent_at", "received_at"} <= columns | {"type"}
    if row.from_extension:
        assert not PRIVACY_FORBIDDEN_FIELDS & set(row.model.model_fields)


def test_the_derived_lists_come_from_the_table() -> None:
    assert len(BY_NAME) == len(EVENT_TYPES) == len(EVENT_MODELS)
    assert {"serp_view", "click", "install_profile"} == EXTENSION_TYPES
    assert set().union(*(types_of(f) for f in FAMILIES)) == set(BY_NAME)
    adapter: TypeAdapter[object] = TypeAdapter(AnyEvent)
    schema = adapter.json_schema()
    assert set(schema["discriminator"]["mapping"]) == set(BY_NAME)
