"""The planted values of a simulated study (migration 0038): what the simulator knows to be
true, printed beside the report's estimates so a reader sees at once whether the interval
holds it. A real study has no rows, and its report says ``planted: null``."""

from __future__ import annotations

from typing import Any

from core.store import Store
from schemas.sql import quote
from studies.arrangement.selection import ReportQuery


def planted_sql(query: ReportQuery, baseline: str) -> str:
    """The planted values of the report's experiment, engine, subset and baseline; FINAL:
    a later simulation of the same experiment replaces earlier rows."""
    return (
        "SELECT arm, quantity, toUInt8(rank) AS rank, value FROM planted_values FINAL "
        f"WHERE experiment_id = {quote(query.experiment_id)} AND engine = {quote(query.engine)} "
        f"AND subset = {quote(query.subset)} AND baseline = {quote(baseline)} "
        "ORDER BY arm, quantity, rank"
    )


async def read_planted(store: Store, query: ReportQuery, baseline: str) -> list[dict[str, Any]] | None:
    """The planted values as {arm, quantity, rank, value}, or None when there are none."""
    rows = (await store.query(planted_sql(query, baseline), read_only=True)).dicts()
    return [
        {"arm": r["arm"], "quantity": r["quantity"], "rank": int(r["rank"]), "value": float(r["value"])}
        for r in rows
    ] or None


def planted_lookup(planted: list[dict[str, Any]] | None) -> dict[tuple[str, str, int], float]:
    """(arm, quantity, rank) -> planted value, for printing beside the estimates."""
    return {(p["arm"], p["quantity"], int(p["rank"])): float(p["value"]) for p in planted or []}
