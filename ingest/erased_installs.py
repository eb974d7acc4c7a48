"""The erased installs, as the intake refuses their events (``install_erased``).

The worker drops an erased install's events whatever ingest does (``schemas/erased_installs``),
so this copy only has to be fresh enough for the answer to be honest: an event refused here
is never answered 202. It is read from the store every ``every_s`` by one background task, as
the registry of arms is (``registered_arms.py``), and the process that runs an erasure notes
it at once. A store that cannot answer leaves the last copy in place; an event of an install
erased in another process within the last seconds can still be answered 202 and is then
dropped by the worker (README, "Erasure").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from pydantic import BaseModel

from core.store import Store, StoreUnavailable
from ingest.validation import Rejection, move_to_rejected
from schemas.erased_installs import HASHES_SQL, install_hash

log = logging.getLogger(__name__)

READ_EVERY_S = 2.0
REASON = "install_erased"


class ErasedInstalls:
    """The hashes of the erased installs, refreshed in the background."""

    def __init__(self, store: Store, every_s: float = READ_EVERY_S) -> None:
        self._store, self._every_s = store, every_s
        self._hashes: frozenset[str] = frozenset()
        self._task: asyncio.Task[None] | None = None
        self._warned_at = -float("inf")

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._refresh(), name="erased installs")

    def note(self, hashes: Sequence[str]) -> None:
        """Installs this process erased: refused from now, not from the next read."""
        self._hashes = self._hashes | frozenset(hashes)

    def refused(self, models: Sequence[BaseModel]) -> list[tuple[int, str, str]]:
        """(position, reason, field) of each event of an erased install."""
        if not self._hashes:
            return []
        out = []
        for i, model in enumerate(models):
            install_id = getattr(model, "install_id", None)
            if isinstance(install_id, str) and install_hash(install_id) in self._hashes:
                out.append((i, REASON, "install_id"))
        return out

    def without_erased(
        self, accepted: list[BaseModel], rejected: list[Rejection]
    ) -> tuple[list[BaseModel], list[Rejection]]:
        return move_to_rejected(accepted, rejected, self.refused(accepted))

    async def _refresh(self) -> None:
        while True:
            await self._read()
            await asyncio.sleep(self._every_s)

    async def _read(self) -> None:
        try:
            result = await self._store.query(HASHES_SQL, read_only=True)
            self._hashes = frozenset(str(r[0]) for r in result.rows) | self._hashes
        except StoreUnavailable:
            pass  # keep the last copy
        except Exception:
            now = asyncio.get_running_loop().time()
            if now - self._warned_at >= 60.0:
                self._warned_at = now
                log.warning("could not read the erased installs; keeping the last copy", exc_info=True)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
