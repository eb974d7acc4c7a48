"""SERP snapshot events (docs/method.md, "Lock-step crawls"), built through the schema model so they validate.

One ``serp_snapshot`` per (round, profile). The event id is UUIDv5 of (study, round,
profile, query): a round re-sent after a crash or by ``crawl reparse`` has the same
ids, and ingest keeps one copy. ``sent_at`` is when the profile's recorded request
started, so ``max(sent_at) - min(sent_at)`` over a round is its lock-step skew;
``loaded_at`` is when its page had finished loading (``max - min``: the load skew), and
``consent`` what was done about a consent wall (``none`` when the page had none).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from schemas.events import SCHEMA_VERSION, SerpResult, SerpSnapshot

NAMESPACE = uuid.UUID("0c7d4b9e-3f61-4a52-8e0a-6b2d9c1f7e35")
MAX_URL = 2048


def snapshot_event_id(study_id: str, round_id: str, profile_id: str, query: str) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, "\x1f".join((study_id, round_id, profile_id, query)))


def results_of(components: Iterable[Mapping[str, Any]]) -> list[SerpResult]:
    """``{rank, type, url}`` per component; a component without a link is labelled by its type."""
    return [
        SerpResult(rank=c["rank"], type=c["type"], url=(c["url"] or c["type"])[:MAX_URL]) for c in components
    ]


def snapshot_event(
    *,
    study_id: str,
    round_id: str,
    profile_id: str,
    role: str,
    treatment: str,
    engine: str,
    query: str,
    query_category: str,
    components: Iterable[Mapping[str, Any]],
    result_estimate: int | None,
    status: str,
    raw_ref: str,
    sent_at: datetime,
    coverage: float | None = None,
    consent: str = "",
    loaded_at: datetime | None = None,
) -> dict[str, Any]:
    model = SerpSnapshot(
        type="serp_snapshot",
        schema_version=SCHEMA_VERSION,
        event_id=snapshot_event_id(study_id, round_id, profile_id, query),
        sent_at=sent_at,
        study_id=study_id,
        round_id=round_id,
        profile_id=profile_id,
        role=role,
        treatment=treatment,
        engine=engine,
        query=query,
        query_category=query_category,
        results=results_of(components) if status == "ok" else [],
        result_estimate=result_estimate,
        status=status,
        raw_ref=raw_ref,
        coverage=coverage if status == "ok" else None,
        consent=consent or "none",
        loaded_at=loaded_at,
    )
    return model.model_dump(mode="json")


def _loaded_at(profile: Mapping[str, Any]) -> datetime | None:
    """When the profile's page had finished loading; None without a page (or an older journal)."""
    if not profile.get("http_status") or not profile.get("answered_at"):
        return None
    return datetime.fromisoformat(profile["answered_at"])


def round_events(record: Mapping[str, Any], *, study_id: str | None = None) -> list[dict[str, Any]]:
    """The snapshots of one journaled round (``study_id`` renames the study, and so the ids)."""
    study = study_id or record["study_id"]
    round_id = record["round_id"] if study_id is None else f"{study}-r{record['round_id'].rsplit('-r', 1)[1]}"
    return [
        snapshot_event(
            study_id=study,
            round_id=round_id,
            profile_id=p["profile_id"],
            role=p["role"],
            treatment=p["treatment"],
            engine=record["engine"],
            query=record["query"],
            query_category=record["category"],
            components=p["components"],
            result_estimate=p["result_estimate"],
            status=p["status"],
            raw_ref=p["raw_ref"],
            sent_at=datetime.fromisoformat(p["sent_at"]),
            coverage=p.get("coverage"),  # absent in journals written before issue 13
            consent=p.get("consent", ""),
            loaded_at=_loaded_at(p),
        )
        for p in record["profiles"]
    ]
