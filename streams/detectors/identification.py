"""Identification-failure spikes per engine: the extension stopped recognising results.

When an engine changes its HTML, the extension's parser fails and events arrive with
``identified = false``. A spike is a recent window whose unidentified share is both
well above the engine's own baseline and large in absolute terms, over enough events
to mean something. The alert id covers the engine and the hour, so a lasting failure
is reported once an hour, not on every check.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from core.store import Store, StoreError, StoreUnavailable
from streams.detectors.alerts import AlertService, alert_record

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IdentificationRule:
    window_minutes: int = 10
    baseline_hours: int = 24
    min_events: int = 200
    min_share: float = 0.2  # at least this share unidentified in the window
    ratio: float = 3.0  # and at least this many times the baseline share


def is_spike(recent: tuple[int, int], baseline: tuple[int, int], rule: IdentificationRule) -> bool:
    """recent and baseline are (unidentified, total) counts; no baseline means none to beat."""
    bad, total = recent
    if total < rule.min_events:
        return False
    share = bad / total
    base_bad, base_total = baseline
    base_share = base_bad / base_total if base_total else 0.0
    return share >= rule.min_share and share >= rule.ratio * base_share


def identification_alert(
    engine: str, recent: tuple[int, int], baseline: tuple[int, int], rule: IdentificationRule, now: datetime
) -> dict[str, Any]:
    bad, total = recent
    base_share = baseline[0] / baseline[1] if baseline[1] else 0.0
    return alert_record(
        "identification_spike",
        "critical",
        engine,
        f"{bad / total:.0%} of {engine} events in the last {rule.window_minutes} min are "
        f"unidentified (baseline {base_share:.1%}): has {engine} changed its result pages?",
        {
            "unidentified": bad,
            "events": total,
            "baseline_share": base_share,
            "window_minutes": rule.window_minutes,
        },
        now,
        once_per=now.strftime("%Y-%m-%dT%H"),
    )


def window_sql(rule: IdentificationRule) -> str:
    """Unidentified and total extension events per engine: the recent window and the baseline before it."""
    w, b = int(rule.window_minutes), int(rule.baseline_hours)
    recent = f"received_at >= now() - INTERVAL {w} MINUTE"
    return (
        "SELECT engine, countIf(NOT identified AND " + recent + ") AS bad, countIf(" + recent + ") AS total, "
        "countIf(NOT identified AND NOT ("
        + recent
        + ")) AS base_bad, countIf(NOT ("
        + recent
        + ")) AS base_total "
        f"FROM extension_events WHERE received_at >= now() - INTERVAL {b} HOUR - INTERVAL {w} MINUTE "
        "GROUP BY engine"
    )


@dataclass
class IdentificationCheck:
    """Timer: an alert for each engine whose identification just collapsed."""

    store: Store
    alerts: AlertService
    rule: IdentificationRule = field(default_factory=IdentificationRule)

    async def check_identification(self) -> None:
        try:
            result = await self.store.query(window_sql(self.rule))
            for engine, bad, total, base_bad, base_total in result.rows:
                recent, baseline = (int(bad), int(total)), (int(base_bad), int(base_total))
                if is_spike(recent, baseline, self.rule):
                    alert = identification_alert(engine, recent, baseline, self.rule, datetime.now(UTC))
                    await self.alerts.raise_once(alert)
        except (StoreError, StoreUnavailable) as exc:
            # the store restarting is expected and retried: one line; a refused statement is not
            log.warning(
                "identification check failed; retrying on the next tick (%s)",
                exc,
                exc_info=not isinstance(exc, StoreUnavailable),
            )
