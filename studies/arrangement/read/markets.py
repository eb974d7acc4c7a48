"""Identification and sample ratio per engine market (issue 35).

The extension runs on every Google country domain and Bing market, and each event says which
(``market``). A layout that one country is served (a new module on google.de) lowers the
identification rate of that market alone, and an arm that breaks a localized page loses
units there alone: both hide in a study-wide figure. Per market this reads, from the
deduplicated raw events (the per-install tables are not split by market), the events and
their identified share, and the clicks each arm kept after preprocessing (the SRM check's
units, as ``streams/detectors/srm.py`` counts them study-wide), tested against the arms'
registered allocation on that engine.

That read scans the study's raw events (seconds at 50M), so it is not part of the report's
default path, which reads per-install rows only: ``report experiment --by-market`` asks for
it, and the board refreshes it at most once a minute.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from analytics.stats.srm import srm_test
from core.store import Store
from schemas.sql import quote
from studies.arrangement.counting import UNIT


def markets_sql(
    experiment_id: str, engine: str, burn_in_days: int, since: str | None = None, until: str | None = None
) -> str:
    """Events, identified events and kept clicks per market and arm (``since`` inclusive and
    ``until`` exclusive, as ClickHouse DateTime text; None: the whole study)."""
    where = [f"experiment_id = {quote(experiment_id)}", f"engine = {quote(engine)}"]
    if since:
        where.append(f"received_at >= toDateTime64({quote(since)}, 3, 'UTC')")
    if until:
        where.append(f"received_at < toDateTime64({quote(until)}, 3, 'UTC')")
    age = "dateDiff('day', install_day, toDate(received_at))"
    kept = f"{UNIT} AND identified AND {age} >= {int(burn_in_days)}"
    return (
        "SELECT market, arm, count() AS n_events, countIf(identified) AS n_identified, "
        f"countIf({kept}) AS n_kept "
        f"FROM extension_events WHERE {' AND '.join(where)} GROUP BY market, arm ORDER BY market, arm"
    )


def market_health(
    rows: Iterable[Mapping[str, Any]], allocation: Mapping[str, float] | None
) -> list[dict[str, Any]]:
    """One row per market, busiest first: events, identified share, kept clicks per arm and,
    for a registered experiment, the SRM test of those clicks against ``allocation``."""
    by_market: dict[str, dict[str, Any]] = {}
    for r in rows:
        m = by_market.setdefault(str(r["market"]), {"events": 0, "identified": 0, "units": {}})
        m["events"] += int(r["n_events"])
        m["identified"] += int(r["n_identified"])
        m["units"][str(r["arm"])] = m["units"].get(str(r["arm"]), 0) + int(r["n_kept"])
    out = []
    for market, m in sorted(by_market.items(), key=lambda kv: (-kv[1]["events"], kv[0])):
        result = srm_test(m["units"], allocation) if allocation else None
        if result is not None and result.units == 0:
            result = None  # nothing kept: nothing to test
        out.append(
            {
                "market": market,
                "events": m["events"],
                "identified_share": m["identified"] / m["events"] if m["events"] else None,
                "units_by_arm": dict(sorted(m["units"].items())),
                "srm_chi2": None if result is None or result.chi2 == float("inf") else result.chi2,
                "srm_p_value": None if result is None else result.p_value,
                "srm_mismatch": None if result is None else result.mismatch,
            }
        )
    return out


async def run_market_health(
    store: Store, experiment_id: str, engine: str, burn_in_days: int, window: tuple[str | None, str | None]
) -> list[dict[str, Any]]:
    """``market_health`` of a study from the store: its events and its registered allocation."""
    rows = await store.query(markets_sql(experiment_id, engine, burn_in_days, *window), read_only=True)
    return market_health(rows.dicts(), await registered_allocation(store, experiment_id, engine))


async def registered_allocation(store: Store, experiment_id: str, engine: str) -> dict[str, float] | None:
    """The arms ``engine`` runs in the registered experiment, with their weights (None:
    not registered): what the SRM tests of the markets and of the report compare against."""
    from schemas.experiments import ExperimentConfig

    registry = await store.query(
        f"SELECT config FROM experiments WHERE experiment_id = {quote(experiment_id)}", read_only=True
    )
    if not registry.rows:
        return None
    return ExperimentConfig.model_validate_json(registry.rows[0][0]).arms_on(engine)
