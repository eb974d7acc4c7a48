"""Fixtures of the worker's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate


@pytest.fixture
async def path(tmp_path: Path) -> AsyncIterator[Path]:
    """A migrated chDB data directory, closed: the test opens its own connections to it."""
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    await migrate(store)
    await store.close()
    yield tmp_path / "ch"
