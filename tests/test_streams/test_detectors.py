from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from streams.detectors.identification import IdentificationRule, identification_alert, is_spike
from streams.sinks.webhook import post_alert

RULE = IdentificationRule(min_events=100, min_share=0.2, ratio=3.0)


@pytest.mark.parametrize(
    ("recent", "baseline", "spike"),
    [
        ((50, 200), (20, 1000), True),  # 25% against 2%
        ((50, 200), (0, 0), True),  # no baseline yet: the absolute share decides
        ((30, 200), (20, 1000), False),  # 15%: under the absolute floor
        ((50, 200), (100, 1000), False),  # 25% against 10%: under 3x the baseline
        ((50, 99), (0, 1000), False),  # too few events to judge
    ],
)
def test_is_spike(recent: tuple[int, int], baseline: tuple[int, int], spike: bool) -> None:
    assert is_spike(recent, baseline, RULE) is spike


def test_alert_is_once_per_engine_and_hour() -> None:
    a = identification_alert("bing", (50, 200), (20, 1000), RULE, datetime(2026, 11, 22, 9, 5, tzinfo=UTC))
    b = identification_alert("bing", (80, 300), (20, 1000), RULE, datetime(2026, 11, 22, 9, 55, tzinfo=UTC))
    c = identification_alert("bing", (50, 200), (20, 1000), RULE, datetime(2026, 11, 22, 10, 5, tzinfo=UTC))
    assert a["alert_id"] == b["alert_id"] != c["alert_id"]
    assert a["kind"] == "identification_spike" and "25%" in a["summary"]


async def test_webhook_posts_the_alert_and_survives_a_dead_endpoint() -> None:
    received: list[dict[str, Any]] = []

    async def hook(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", hook)
    alert = identification_alert("bing", (50, 200), (0, 0), RULE, datetime(2026, 11, 22, tzinfo=UTC))
    async with TestServer(app) as server:
        assert await post_alert(str(server.make_url("/hook")), alert)
    assert received[0]["alert_id"] == alert["alert_id"] and received[0]["text"].startswith("[critical]")
    assert not await post_alert("http://127.0.0.1:9/hook", alert, timeout_s=2)  # nothing listens on port 9
