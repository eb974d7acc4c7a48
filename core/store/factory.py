"""Pick the backend from the settings."""

from __future__ import annotations

from collections.abc import Callable

from core.settings import Settings
from core.store.base import Store


def open_store(
    settings: Settings, *, own_chdb: bool = False, statements: Callable[[str], list[str]] | None = None
) -> Store:
    """The store this process should use.

    A ClickHouse URL wins; otherwise embedded mode reaches chDB through its owner
    (``store_url``), unless this process is the owner (``own_chdb``). ``statements`` turns
    each statement a server store executes into what the server runs (a cluster's forms:
    ``schemas.cluster_store.open_service_store``).
    """
    if settings.clickhouse_url:
        from core.store.server_store import ServerStore

        return ServerStore(
            settings.clickhouse_url,
            read_lanes=settings.store_read_lanes,
            read_url=settings.clickhouse_read_url,
            statements=statements,
        )
    if settings.store_url and not own_chdb:
        from core.store.http_store import HttpStore

        return HttpStore(settings.store_url, settings.store_token.get_secret_value())
    from core.store.chdb_store import ChdbStore

    return ChdbStore(settings.chdb_path)
