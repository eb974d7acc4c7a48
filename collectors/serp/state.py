"""Saved state of studies, so a killed crawler resumes on the same grid without re-running rounds.

One directory per study under the state dir:

- ``study.json``: the study as validated, its fingerprint, the grid's ``start`` and
  ``finished_at``, written atomically;
- ``journal.jsonl`` (``collectors.common.journal``), one fsynced line per step:
  ``round_started`` (fetches launched), ``round`` (every profile's answer: the whole
  round, from which its events are built), ``emitted`` (its events are durable in the
  sink) and ``missed`` (its slot passed: the crawler was down or interrupted);
- ``cookies/<profile>.pickle``: each HTTP profile's cookie jar, kept across restarts;
- ``browser/<profile>/``: each browser profile's Chromium user-data directory (cookies,
  storage, cache), kept across restarts (``collectors.serp.browser``).

A round is emitted only from its ``round`` record, in one batch, so a partial round
is never emitted; a ``round`` without ``emitted`` is re-sent on resume with the same
event ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from collectors.common.exceptions import CrawlStateError
from collectors.common.journal import Journal, read_journal, write_atomic
from collectors.serp.study import Study


class StudyJournal(Journal):
    def __init__(self, directory: Path, doc: dict[str, Any]) -> None:
        super().__init__(directory, f"study {doc['study']['study']['id']}")
        self.doc = doc

    @property
    def study_id(self) -> str:
        return str(self.doc["study"]["study"]["id"])

    @property
    def start(self) -> datetime:
        return datetime.fromisoformat(self.doc["start"])

    @property
    def finished_at(self) -> str | None:
        return self.doc.get("finished_at")

    def start_grid(self, now: datetime) -> None:
        """Move a new study's first slot to just after ``now`` (its fetchers took a while to
        start: launching browsers takes seconds). Only before anything was journaled."""
        if self.records:
            raise CrawlStateError(f"study {self.study_id} has journaled rounds: its grid is fixed")
        self.doc = {**self.doc, "start": _first_slot(now).isoformat()}
        write_atomic(self.directory / "study.json", _dump(self.doc))

    def finish(self) -> None:
        self.doc = {**self.doc, "finished_at": datetime.now(UTC).isoformat()}
        write_atomic(self.directory / "study.json", _dump(self.doc))

    def of(self, kind: str) -> Iterator[dict[str, Any]]:
        return (r for r in self.records if r["kind"] == kind)

    def rounds(self, kind: str) -> set[int]:
        return {int(r["round"]) for r in self.of(kind)}

    def __enter__(self) -> StudyJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _first_slot(now: datetime) -> datetime:
    """A whole second just after ``now``: time to journal and prepare round 0."""
    return (now + timedelta(seconds=1.5)).replace(microsecond=0).astimezone(UTC)


def _dump(doc: dict[str, Any]) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2)


@dataclass(frozen=True)
class StudyInfo:
    doc: dict[str, Any]
    directory: Path

    @property
    def study_id(self) -> str:
        return str(self.doc["study"]["study"]["id"])

    def records(self) -> list[dict[str, Any]]:
        """The journal, read without taking ownership (for a running study)."""
        path = self.directory / "journal.jsonl"
        return read_journal(path) if path.exists() else []


class StudyStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def open(self, study: Study, now: datetime) -> StudyJournal:
        """The study's journal: created on first run (the grid starts at ``start``, by default on
        a whole second just after ``now``), reopened if the file still describes the same study."""
        directory = self.root / study.id
        path = directory / "study.json"
        if path.exists():
            doc = orjson.loads(path.read_bytes())
            if doc["fingerprint"] != study.fingerprint():
                raise CrawlStateError(
                    f"study {study.id} was started with other settings (queries, profiles, engine or "
                    f"timing); its events are keyed by the study id, so give the changed study a new id"
                )
            given = study.study.start
            if given is not None and datetime.fromisoformat(doc["start"]) != given:
                raise CrawlStateError(
                    f"study {study.id} started at {doc['start']}, the file now says {given}"
                )
        else:
            lead = timedelta(seconds=study.lead(0))  # round 0's history steps come first
            start = study.study.start.astimezone(UTC) if study.study.start else _first_slot(now + lead)
            doc = {
                "study": study.model_dump(mode="json"),
                "fingerprint": study.fingerprint(),
                "start": start.isoformat(),
                "created_at": now.isoformat(),
                "finished_at": None,
            }
            directory.mkdir(parents=True, exist_ok=True)
            write_atomic(path, _dump(doc))
        (directory / "cookies").mkdir(exist_ok=True)
        return StudyJournal(directory, doc)

    def info(self, study_id: str) -> StudyInfo:
        directory = self.root / study_id
        try:
            doc = orjson.loads((directory / "study.json").read_bytes())
        except FileNotFoundError:
            raise CrawlStateError(f"no saved study {study_id!r} under {self.root}") from None
        return StudyInfo(doc, directory)

    def open_saved(self, study_id: str) -> StudyJournal:
        """A saved study's journal, for reparse."""
        info = self.info(study_id)
        return StudyJournal(info.directory, info.doc)

    def exists(self, study_id: str) -> bool:
        return (self.root / study_id / "study.json").is_file()
