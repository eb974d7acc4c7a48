"""What is derived after a batch is stored, one processor per event family.

A processor has ``after_store(events)``, given every event of a stored batch (replays
included: recomputing is idempotent). It may return a future the batch's acknowledgement
waits on. Store errors propagate (the sink retries the batch); other failures are logged
and counted by the sink without blocking the partition. ``for_families`` maps each
family to its processor: adding a study family means adding one processor here and one
row in ``schemas/event_types.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from analytics.stats.autocomplete_shocks import ShockRule
from core.store import Store
from schemas.topics import AUTOCOMPLETE, EXTENSION, SERP
from streams.detectors.alerts import AlertService
from streams.processors.arrangement_rollup import ArrangementRollup
from streams.processors.autocomplete_crawls import AutocompleteAnalytics
from streams.processors.extension_aggregates import ExtensionAggregates
from streams.processors.personalization_rounds import PersonalizationRounds


class AfterStore(Protocol):
    async def after_store(self, events: Sequence[Mapping[str, Any]]) -> asyncio.Future[None] | None: ...


def for_families(
    store: Store,
    alerts: AlertService,
    rollup: ArrangementRollup | None,
    shock_rule: ShockRule,
    round_wait_s: float,
    shock_settle_s: float = 0.0,
    autocomplete_positions: Callable[[], Mapping[int, tuple[int | None, int | None]]] | None = None,
) -> dict[str, AfterStore]:
    """The processor of each family, by family name."""
    return {
        EXTENSION.name: ExtensionAggregates(store, rollup),
        AUTOCOMPLETE.name: AutocompleteAnalytics(
            store, alerts.raise_once, shock_rule, shock_settle_s, autocomplete_positions
        ),
        SERP.name: PersonalizationRounds(store, round_wait_s),
    }
