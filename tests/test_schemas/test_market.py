"""The extension events' ``market`` (issue 35): the engine's coarse market as a short code,
never a host or a URL, and optional, so older extensions and the simulators stay valid."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import TypeAdapter, ValidationError

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from core.store.chdb_store import ChdbStore
from schemas.event_types import AnyEvent
from schemas.events import Click, SerpView
from schemas.migrate import migrate
from schemas.sql import load_migrations

DOMAINS = Path(__file__).resolve().parents[2] / "extension" / "google_domains.txt"
ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyEvent)


def view(**fields: Any) -> dict[str, Any]:
    return {
        "type": "serp_view", "schema_version": 1, "event_id": str(uuid.uuid4()),
        "sent_at": "2026-11-27T10:00:00.000Z", "experiment_id": "pm1", "arm": "control",
        "engine": "google", "install_id": "abcdefgh-1234", "install_day": "2026-11-20",
        "extension_version": "0.2.0", "page_index": 0, "n_organic": 10, "ads_top_count": 0,
        "box": "none", "ssr_positions": [], "identified": True, "ui_lang": "de", **fields,
    }  # fmt: skip


def google_markets() -> list[str]:
    """What extension/lib/markets.js derives for each listed domain: its last label."""
    lines = DOMAINS.read_text(encoding="utf-8").splitlines()
    return [line.rsplit(".", 1)[-1] for line in lines if line.startswith(".google.")]


def test_every_market_the_extension_derives_is_valid() -> None:
    markets = google_markets()
    assert len(markets) > 150 and {"com", "de", "ch", "uk", "br", "cat"} <= set(markets)
    for market in [*markets, "de-de", "fr-ch", "zh-cn", "es-xl", "de", ""]:
        assert SerpView.model_validate(view(market=market)).market == market


@pytest.mark.parametrize(
    "market",
    ["DE", "de-DE", "www.google.de", "google.co.uk", "co.uk", "https://www.bing.com/", "deutschland",
     "d", "de-de-de", "de\n", " de", "zh-hant-tw", 49, None, ["de"]],
)  # fmt: skip
def test_anything_but_a_short_code_is_refused(market: Any) -> None:
    with pytest.raises(ValidationError) as info:
        SerpView.model_validate(view(market=market))
    assert info.value.errors()[0]["loc"] == ("market",)


def test_events_without_a_market_stay_valid_and_store_an_empty_one() -> None:
    event = view()
    assert "market" not in event
    assert SerpView.model_validate(event).market == ""
    click = {**view(), "type": "click", "element_type": "organic", "original_rank": 1, "display_rank": 1}
    assert Click.model_validate(click).model_dump()["market"] == ""
    traffic = ExtensionTraffic(TrafficConfig(installs=5, seed=3))
    events = [e for _ in range(50) for e in traffic.page()]
    assert events and all("market" not in e for e in events)
    assert all(ADAPTER.validate_python(e).market == "" for e in events)


async def test_migration_0036_stores_the_market_and_the_view_shows_it(tmp_path: Path) -> None:
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    try:
        await migrate(store)
        (m36,) = [m for m in load_migrations() if m.version == 36]
        for statement in m36.statements:  # applied again (an interrupted migration is)
            await store.execute(statement)
        received = datetime.now(UTC).isoformat(timespec="milliseconds")
        rows = [
            SerpView.model_validate(view(market="uk")).model_dump(mode="json"),
            SerpView.model_validate(view(engine="bing", market="de-de")).model_dump(mode="json"),
            {k: v for k, v in view(arm="old").items() if k != "market"},  # a row written before the field
        ]
        lines = b"\n".join(orjson.dumps({**r, "received_at": received}) for r in rows)
        await store.insert_json_rows("raw_extension_events", lines)
        result = await store.query("SELECT engine, arm, market FROM extension_events ORDER BY market")
        assert [tuple(r) for r in result.rows] == [
            ("google", "old", ""),
            ("bing", "control", "de-de"),
            ("google", "control", "uk"),
        ]
    finally:
        await store.close()
