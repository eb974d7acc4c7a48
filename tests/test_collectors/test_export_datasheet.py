"""The datasheet of an export (README.md): the study, how to use it, its registration and
plan, each file with its rows, each table with its columns' types and meanings, taken from
schemas/clickhouse/README.md."""

from __future__ import annotations

from typing import Any

import pytest

from collectors.export_datasheet import render
from schemas.export_tables import KINDS
from schemas.table_docs import meaning, table_docs

COLUMNS = {
    "extension_events": [("event_id", "UUID"), ("type", "LowCardinality(String)"),
                         ("ssr_positions", "Array(UInt8)"), ("element_type", "LowCardinality(String)"),
                         ("received_at", "DateTime64(3, 'UTC')")],
    "clicks_by_rank_1m": [("experiment_id", "LowCardinality(String)"), ("original_rank", "UInt8"),
                          ("units", "UInt64"), ("ctr", "Float64")],
}  # fmt: skip


def manifest(kind: str = "arrangement", **extra: Any) -> dict[str, Any]:
    tables = []
    for table in KINDS[kind].tables:
        columns = COLUMNS.get(table.name, [("engine", "String")])
        suffix = ".jsonl.gz" if table.events else ".parquet"
        tables.append(
            {
                "name": table.name,
                "events": table.events.name if table.events else None,
                "key": list(table.key),
                "columns": [{"name": n, "type": t} for n, t in columns],
                "rows": 1234,
                "documented_as": list(table.documented_as),
                "file": f"{'events' if table.events else 'tables'}/{table.name}{suffix}",
                "written": 1234,
                "refused": 0,
            }
        )
    return {
        "kind": kind,
        "study": "pm1",
        "study_is": KINDS[kind].study,
        "selected_by": KINDS[kind].where("pm1"),
        "exported_at": "2026-11-29 05:00:00.000",
        "version": "0.1.0",
        "client_version": "0.1.0",
        "command": "auditstream export arrangement pm1 --out pm1",
        "tables": tables,
        "registration": None,
        "plan": None,
    } | extra


REGISTRATION = {
    "experiment_id": "pm1", "engines": ["google"], "arms": {"control": 4, "swap_1_2": 1}, "salt": "salt-1234",
    "start": "2026-10-01", "end": None, "burn_in_days": 4, "unit_mode": "click", "status": "running",
}  # fmt: skip
PLAN = {
    "version": 2,
    "sha256": "ab" * 32,
    "plan": {"experiment_id": "pm1"},
    "history": [
        {"version": 1, "sha256": "cd" * 32, "registered_at": "2026-10-01 00:00:00.000",
         "registered_by": "ops", "kind": "registration", "reason": ""},
        {"version": 2, "sha256": "ab" * 32, "registered_at": "2026-10-02 00:00:00.000",
         "registered_by": "ops", "kind": "amendment", "reason": "burn-in | 2"},
    ],
}  # fmt: skip


def test_the_datasheet_says_what_the_study_is_and_how_to_use_it() -> None:
    text = render(manifest())
    assert text.startswith("# arrangement study `pm1`: an auditstream export")
    assert "the rows where `experiment_id = 'pm1'`" in text and "2026-11-29 05:00:00.000 UTC" in text
    assert "auditstream export arrangement pm1 --out pm1" in text
    events = "events/extension_events.jsonl.gz events/install_profiles.jsonl.gz"
    assert f"auditstream import {events} --url" in text
    assert "The experiment was not registered" in text and "No analysis plan was registered." in text
    assert "| `tables/clicks_by_rank_1m.parquet` | 1,234 | result table `clicks_by_rank_1m` |" in text
    for table in KINDS["arrangement"].tables:
        assert f"### `{table.name}` (" in text


def test_each_column_has_its_type_and_the_meaning_the_schema_readme_gives() -> None:
    text = render(manifest())
    assert "| `ssr_positions` | Array(UInt8) | all | display positions of specialized results |" in text
    assert (
        "| `element_type` | LowCardinality(String) | click | `organic`/`ad`/`shopping_box`/`ssr`/`other` |"
        in text
    )
    assert "| `age_band` |  | all | not stored by the service: never in an export |" in text  # none here
    assert "| `units` | UInt64 | is the number of click events on first result pages" in text
    assert "| `ctr` | Float64 | ctr = clicks / units |" in text
    assert (
        "| `experiment_id` | LowCardinality(String) | the experiment |" in text
    )  # said nowhere: the general
    assert table_docs()["clicks_by_rank_1m"].split("\n")[0] in text  # the table's own text


def test_the_registration_and_every_version_of_the_plan_are_in_it() -> None:
    text = render(manifest(registration=REGISTRATION, plan=PLAN))
    assert "arms `control` (4), `swap_1_2` (1); engines google" in text and "salt `salt-1234`" in text
    assert "curl -X PUT $URL/v1/experiments/pm1/plan" in text
    assert "Analysis plan version 2 (sha256 `" + "ab" * 32 + "`)" in text
    assert "| 2 | amendment | 2026-10-02 00:00:00.000 | ops | abababababab | burn-in \\| 2 |" in text


@pytest.mark.parametrize("kind", ["autocomplete", "personalization"])
def test_a_crawler_study_has_its_family_s_method_and_no_registration(kind: str) -> None:
    text = render(manifest(kind))
    assert "## How the results were computed" in text and "## Registration" not in text
    assert ("**Trimmed first" in text) == (kind == "autocomplete")


def test_rows_left_out_are_said() -> None:
    doc = manifest()
    doc["tables"][0]["refused"] = 3
    assert "3 stored rows were left out" in render(doc)


@pytest.mark.parametrize(
    ("text", "column", "said"),
    [
        ("`a` (the first), `b` (the second).", "b", "the second"),
        ("`a, b` (both), `c` is the third; more.", "c", "is the third"),
        ("`a, b` (both), `c` is the third; more.", "a", ""),  # listed with b: the words are b's
        ("`k` = `x` (one) or `y` (two), `x` (a column)", "k", "= `x` (one) or `y` (two)"),
        ("`k` = `x` (one) or `y` (two), `x` (a column)", "x", "a column"),  # a value first
        ("rows per `(a, b)`; `a` runs 1..10 for each `b`.", "a", "runs 1..10 for each"),
        ("nothing about it", "a", ""),
        ("`r = u / c`, the rate", "r", "r = u / c"),
    ],
)
def test_a_column_s_meaning_is_the_clause_that_names_it(text: str, column: str, said: str) -> None:
    assert meaning(text, column, ("a", "b", "c", "k", "x", "r")) == said
