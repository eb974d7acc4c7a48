"""The ``alerts`` row every detector writes (table ``alerts``, topic ``<prefix>.alerts``)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import orjson

from core.store import Store
from schemas.sql import quote
from streams.metrics import WorkerMetrics
from streams.sinks.webhook import post_alert

log = logging.getLogger(__name__)

ALERT_NAMESPACE = uuid.UUID("6f1c2d4e-8a9b-4c3d-9e0f-1a2b3c4d5e6f")


def alert_record(
    kind: str,
    severity: str,
    subject: str,
    summary: str,
    details: dict[str, Any],
    now: datetime,
    once_per: str = "",
) -> dict[str, Any]:
    """One alert. Its id depends only on kind, subject and ``once_per`` (e.g. an hour), so a
    detector that finds the same condition again raises nothing new."""
    return {
        "alert_id": str(
            uuid.uuid5(ALERT_NAMESPACE, f"{kind}:{subject}:{once_per}" if once_per else f"{kind}:{subject}")
        ),
        "created_at": now.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
        "kind": kind,
        "severity": severity,
        "subject": subject,
        "summary": summary,
        "details": orjson.dumps(details).decode(),
    }


class AlertService:
    """Raises each alert once: stored in ``alerts``, published on the alerts topic and,
    if configured, posted to a webhook. Every detector and processor is given this one."""

    def __init__(
        self,
        store: Store,
        publish: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
        webhook_url: str = "",
        metrics: WorkerMetrics | None = None,
    ) -> None:
        self.metrics = metrics or WorkerMetrics.create()
        self.store = store
        self.publish = publish
        self.webhook_url = webhook_url
        self._lock = asyncio.Lock()

    async def raise_once(self, alert: dict[str, Any]) -> None:
        async with self._lock:  # detectors run concurrently: check and insert as one step
            known = await self.store.query(
                f"SELECT count() FROM alerts WHERE alert_id = {quote(alert['alert_id'])}"
            )
            if known.rows and int(known.rows[0][0]) > 0:
                return
            log.warning("alert: %s", alert["summary"])
            await self.store.insert_json_rows("alerts", orjson.dumps(alert))
            self.metrics.alerts.labels(alert["kind"]).inc()
            if self.publish is not None:
                await self.publish(alert)
            if self.webhook_url:
                ok = await post_alert(self.webhook_url, alert)
                self.metrics.webhook.labels("ok" if ok else "error").inc()
