"""One ClickHouse access layer, three ways to reach it, the same SQL everywhere.

- ``ChdbStore``: chDB in this process (the owner of the data directory).
- ``HttpStore``: the chDB owner in another process (embedded mode; chDB allows one owner).
- ``ServerStore``: a ClickHouse server through clickhouse-driver (production).
"""

from core.store.base import QueryResult, Store, StoreError, StoreUnavailable
from core.store.factory import open_store

__all__ = ["QueryResult", "Store", "StoreError", "StoreUnavailable", "open_store"]
