"""Alerts to a webhook (Slack-compatible JSON with the alert's fields), best effort.

The alert is already in ClickHouse and on the alerts topic when this runs, so a dead
webhook is logged and counted, never retried forever or allowed to stall the sink.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp

log = logging.getLogger(__name__)


async def post_alert(url: str, alert: dict[str, Any], timeout_s: float = 5.0) -> bool:
    body = {"text": f"[{alert['severity']}] {alert['summary']}", **alert}
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session,
            session.post(url, json=body) as resp,
        ):
            ok = resp.status < 300
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.warning("alert webhook failed: %s", exc)
        ok = False
    else:
        if not ok:
            log.warning("alert webhook answered %s", resp.status)
    return ok
