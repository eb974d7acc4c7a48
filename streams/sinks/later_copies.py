"""Exactly once with several writers: the copies of one event two writers stored at once.

A writer looks an event id up and inserts the event only if it is absent. Within one
store's write lane (chDB's owner, and the store server in front of it) the two are one
step. Writers with connections of their own (the worker and an import against a ClickHouse
server; two workers while partitions move) can both look an id up before either inserts
it, and both insert. Their copies differ in ``received_at`` (the moment a live event
arrived; an imported line's own), so they differ in the raw table's sorting key, and
``ReplacingMergeTree`` never merges them.

So a writer whose store is not the only writer (``Store.one_writer``) looks the ids of its
batch up again, once its insert is acknowledged (all of them: a retried batch finds its
own earlier copies stored, and must still settle them), and deletes every copy received
after the first (the earliest ``received_at``, as a lookup keeps the first). Of two
writers racing on one id, the one that looks last sees both copies, so at least one of
them deletes, and both choose the same copy. The deleted copies are handed back: the
writer recomputes what they may have been counted in, since the other writer may have
recomputed its keys while its copy still stood.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.store import Store
from schemas.sql import quote
from schemas.wire import parse_received_at

DELETE_CHUNK = 1000
"""Ids per DELETE: each is named twice and its first copy's time once (~110 bytes), inside
ClickHouse's default ``max_query_size`` of 256 KiB."""
NEVER = "2299-12-31 23:59:59.999"
"""The first time of an id not listed: no copy is later (DateTime64's last moment)."""


def repeated_sql(table: str, where: str, ids_sql: str) -> str:
    """The ids of ``ids_sql`` stored with more than one ``received_at`` in ``where``, each
    with its first. Copies with the same ``received_at`` have the same sorting key, and the
    table merges them (reads use FINAL)."""
    return (
        f"SELECT toString(event_id), toString(min(received_at)) FROM {table} "
        f"WHERE {where} AND event_id IN ({ids_sql}) "
        "GROUP BY event_id HAVING uniqExact(received_at) > 1"
    )


def later_where(where: str, firsts: Sequence[tuple[str, str]]) -> str:
    """The rows of the ids in ``firsts`` (id, first received_at) received after their first.
    Only strictly later ones: a copy received earlier than the first this writer saw
    (a third writer's, stored since) is never deleted, so the earliest copy always stays."""
    ids = ", ".join(quote(i) for i, _ in firsts)
    times = ", ".join(quote(t) for _, t in firsts)
    first = f"toDateTime64(transform(toString(event_id), [{ids}], [{times}], {quote(NEVER)}), 3, 'UTC')"
    return f"{where} AND event_id IN ({ids}) AND received_at > {first}"


def later_rows_sql(table: str, where: str) -> str:
    """The later copies, with their id and time as text (``as_read``)."""
    return (
        "SELECT *, toString(event_id) AS id_text, toString(received_at) AS received_text "
        f"FROM {table} WHERE {where}"
    )


def as_read(row: dict[str, Any]) -> dict[str, Any]:
    """A row of ``later_rows_sql`` with its id and received_at as the wire writes them."""
    out = dict(row)
    out["event_id"], out["received_at"] = out.pop("id_text"), out.pop("received_text")
    return out


async def delete_later_copies(
    store: Store, table: str, where: str, ids_sqls: Sequence[str]
) -> list[dict[str, Any]]:
    """Delete the copies of the ids (each of ``ids_sqls`` the inside of an ``IN``) received
    after their first, within ``where``; return them. Nothing to do when ``store`` is the
    only writer."""
    if store.one_writer:
        return []
    firsts: list[tuple[str, str]] = []
    for ids_sql in ids_sqls:
        result = await store.query(repeated_sql(table, where, ids_sql))
        firsts += [(str(i), str(t)) for i, t in result.rows]
    deleted: list[dict[str, Any]] = []
    for start in range(0, len(firsts), DELETE_CHUNK):
        later = later_where(where, firsts[start : start + DELETE_CHUNK])
        deleted += map(as_read, (await store.query(later_rows_sql(table, later))).dicts())
        await store.execute(f"DELETE FROM {table} WHERE {later}")
    return deleted


def own_copies(deleted: Sequence[dict[str, Any]], received: dict[str, str]) -> set[str]:
    """The ids whose deleted copy is the writer's own (``received``: id to the received_at it
    wrote): events another writer stored first, so this one stored nothing."""
    return {
        row["event_id"]
        for row in deleted
        if row["event_id"] in received and same_moment(row["received_at"], received[row["event_id"]])
    }


def same_moment(a: str, b: str) -> bool:
    """Two received_at texts naming one millisecond (the store's and the wire's forms)."""
    return parse_received_at(a) == parse_received_at(b)


ERASED_CHUNK = 2000
"""Ids per ``delete_events`` statement (~80 KB of quoted ids)."""


async def delete_events(store: Store, table: str, where: str, ids: Sequence[str]) -> None:
    """Delete the rows of these event ids within ``where`` (quoted ids: a mutation on a
    replicated table must not read from a subquery)."""
    ids = list(ids)
    for start in range(0, len(ids), ERASED_CHUNK):
        listed = ", ".join(quote(i) for i in ids[start : start + ERASED_CHUNK])
        await store.execute(f"DELETE FROM {table} WHERE {where} AND event_id IN ({listed})")
