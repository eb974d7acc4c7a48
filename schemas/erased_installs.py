"""Erased installs, as every process names and looks them up (``streams/erasure.py`` erases).

An erased install is kept as the SHA-256 of its id, never the id: enough to refuse and drop
its events, nothing that names it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from schemas.sql import quote

TABLE = "erased_installs"
HASHES_SQL = f"SELECT install_hash FROM {TABLE}"
INSTALL_HASH_SQL = "lower(hex(SHA256(install_id)))"
"""``install_hash`` in SQL, of a row's install_id."""


def install_hash(install_id: str) -> str:
    """The SHA-256 of an install id, hex: how erasures name an install."""
    return hashlib.sha256(install_id.encode()).hexdigest()


def erased_lookup_sql(events: Sequence[Mapping[str, Any]], chunk: int = 2000) -> list[str]:
    """Queries of the ids of ``events`` whose install is erased, ``chunk`` ids each (inside
    ``max_query_size``): one of the raw writer's lookups, run in the same store step as its
    insert, so what they find is not inserted. Each install's hash is written once, with
    the ids of its events."""
    out = []
    for start in range(0, len(events), chunk):
        ids_by_install: dict[str, list[str]] = {}
        for e in events[start : start + chunk]:
            if isinstance(e.get("install_id"), str):
                ids_by_install.setdefault(e["install_id"], []).append(quote(str(e["event_id"])))
        if not ids_by_install:
            continue
        pairs = ", ".join(
            f"({quote(install_hash(install))}, [{', '.join(ids)}])" for install, ids in ids_by_install.items()
        )
        out.append(
            f"SELECT arrayJoin(tupleElement(p, 2)) FROM (SELECT arrayJoin([{pairs}]) AS p) "
            f"WHERE tupleElement(p, 1) IN ({HASHES_SQL})"
        )
    return out
