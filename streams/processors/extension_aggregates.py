"""After a batch of extension events is stored: the minute aggregate and the per-install
statistics of the 10-second slices and of the installs it touched."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from core.store import Store
from streams.processors.arrangement_rollup import ArrangementRollup
from streams.recompute.batch import install_keys, slice_keys
from studies.arrangement.write import clicks_by_rank


class ExtensionAggregates:
    """``clicks_by_rank`` is recomputed with the batch; the per-install slices are queued on
    the roll-up (``None``: estimators off), whose future the batch's acknowledgement waits on."""

    def __init__(self, store: Store, rollup: ArrangementRollup | None) -> None:
        self.store = store
        self.rollup = rollup

    async def after_store(self, events: Sequence[Mapping[str, Any]]) -> asyncio.Future[None] | None:
        if not events:
            return None
        keys = slice_keys(events, clicks_by_rank.SLICE_S)
        await self.store.execute(clicks_by_rank.recompute_sql(keys))
        return self.rollup.mark(keys, install_keys(events)) if self.rollup is not None else None
