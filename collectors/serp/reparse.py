"""Re-parse a saved study's archived pages with the current parser and rules.

What was fetched stays as it was (rounds, profiles, ``sent_at``, ``raw_ref``); each
snapshot's status, estimate and results are rebuilt from its archived page. Event
ids are the original ones (or derived from ``as_study_id``), so the output can be
compared with, or replace, what the crawl emitted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from collectors.common.archive import Archive
from collectors.common.exceptions import ArchiveError
from collectors.serp.events import round_events
from collectors.serp.parser import parse_serp
from collectors.serp.state import StudyJournal

_PARSED = ("status", "detail", "result_estimate", "language", "components", "coverage")


@dataclass
class ReparseStats:
    rounds: int = 0
    snapshots: int = 0
    changed: int = 0
    """Snapshots whose status, estimate or results differ from what the crawl recorded."""
    unarchived: int = 0
    """Snapshots with no archived page (no answer, or a missing file): kept as recorded."""
    problems: list[str] = field(default_factory=list)


def reparse_profile(
    engine: str, profile: dict[str, Any], archive: Archive, stats: ReparseStats
) -> dict[str, Any]:
    stats.snapshots += 1
    if not profile["raw_ref"]:
        stats.unarchived += 1
        return profile
    try:
        saved = archive.get(profile["raw_ref"])
    except ArchiveError as exc:
        stats.unarchived += 1
        stats.problems.append(str(exc))
        return profile
    parsed = parse_serp(engine, saved.body, http_status=int(saved.meta.get("status", 200)))
    doc = parsed.to_json()
    new = {**profile, **{k: doc.get(k, "") for k in _PARSED}, "parse_errors": len(parsed.errors)}
    if any(new[k] != profile.get(k) for k in _PARSED if k not in ("detail", "coverage")):
        stats.changed += 1
    return new


def reparse_events(
    journal: StudyJournal, archive: Archive, stats: ReparseStats, *, as_study_id: str | None = None
) -> Iterator[dict[str, Any]]:
    """Corrected snapshot events of every recorded round, in round order."""
    for record in sorted(journal.of("round"), key=lambda r: int(r["round"])):
        stats.rounds += 1
        profiles = [reparse_profile(record["engine"], p, archive, stats) for p in record["profiles"]]
        yield from round_events({**record, "profiles": profiles}, study_id=as_study_id)
