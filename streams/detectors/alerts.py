"""The ``alerts`` row every detector writes (table ``alerts``, topic ``<prefix>.alerts``)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import orjson

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
