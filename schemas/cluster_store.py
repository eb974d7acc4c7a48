"""The store a service opens: on a ClickHouse cluster, with its mutations in their cluster form.

``core`` knows nothing of tables, so the cluster's rewriting of the service's statements
(``cluster_ddl.runtime_statements``) is handed to the store from here.
"""

from __future__ import annotations

from core.settings import Settings
from core.store import Store
from core.store.factory import open_store
from schemas.cluster_ddl import runtime_statements


def open_service_store(settings: Settings, *, own_chdb: bool = False) -> Store:
    """``open_store``, with ``AUDITSTREAM_CLICKHOUSE_CLUSTER``'s forms against a server."""
    cluster = settings.clickhouse_cluster
    if not (cluster and settings.clickhouse_url):
        return open_store(settings, own_chdb=own_chdb)
    return open_store(settings, own_chdb=own_chdb, statements=lambda sql: runtime_statements(sql, cluster))
