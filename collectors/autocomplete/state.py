"""Saved state of crawls, so a crash or Ctrl-C resumes without re-requesting done nodes.

One directory per crawl under the state dir:

- ``crawl.json``: the parameters and ``finished_at``, written atomically (tmp + rename);
- ``journal.jsonl``: one line per finished step (``started``, ``node``, ``completed``, or
  ``failed``: a root whose own request failed, see ``crawler``), appended and fsynced before
  the crawler moves on (``collectors.common.journal``).

The journal, not a snapshot of the queue, is the state: the frontier is a pure
function of the node results (see ``bfs``), so replaying them rebuilds it exactly, and
each step costs one short append instead of rewriting a growing file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from collectors.common.exceptions import CrawlStateError
from collectors.common.journal import Journal, read_journal, write_atomic


@dataclass(frozen=True)
class CrawlParams:
    """What a crawl is; everything that changes its results is in the fingerprint."""

    crawl_id: str
    roots: tuple[str, ...]
    engines: tuple[tuple[str, str], ...]
    """(engine, format) pairs."""
    max_depth: int = 8
    node_cap: int | None = 2000
    trimming_rule: str = "first_last_word"
    lang: str = "en"
    market: str = "en-US"
    study: str = ""
    """The study the crawl belongs to; churn and nmi compare crawls of the same study."""
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())

    @property
    def fingerprint(self) -> str:
        doc = [
            sorted(self.roots),
            sorted(self.engines),
            self.max_depth,
            self.node_cap,
            self.trimming_rule,
            self.lang,
            self.market,
            self.study,
        ]
        return hashlib.sha256(orjson.dumps(doc)).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "fingerprint": self.fingerprint}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> CrawlParams:
        return cls(
            crawl_id=doc["crawl_id"],
            roots=tuple(doc["roots"]),
            engines=tuple((e, f) for e, f in doc["engines"]),
            max_depth=doc["max_depth"],
            node_cap=doc["node_cap"],
            trimming_rule=doc["trimming_rule"],
            lang=doc["lang"],
            market=doc["market"],
            study=doc.get("study", ""),
            created_at=doc["created_at"],
        )


class CrawlJournal(Journal):
    """One crawl's parameters and finished steps; ``append`` is safe from worker threads."""

    def __init__(self, directory: Path, params: CrawlParams, finished_at: str | None) -> None:
        super().__init__(directory, f"crawl {params.crawl_id}")
        self.params = params
        self.finished_at = finished_at

    def finish(self) -> None:
        self.finished_at = datetime.now(UTC).isoformat()
        write_atomic(self.directory / "crawl.json", _crawl_doc(self.params, self.finished_at))

    def __enter__(self) -> CrawlJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # views used to resume and to reparse

    def of(self, kind: str, engine: str | None = None, root: str | None = None) -> Iterator[dict[str, Any]]:
        for r in self.records:
            if r["kind"] == kind and engine in (None, r["engine"]) and root in (None, r["root"]):
                yield r

    def has(self, kind: str, engine: str, root: str) -> bool:
        return next(self.of(kind, engine, root), None) is not None


def _crawl_doc(params: CrawlParams, finished_at: str | None) -> bytes:
    return orjson.dumps({**params.to_json(), "finished_at": finished_at}, option=orjson.OPT_INDENT_2)


@dataclass(frozen=True)
class CrawlInfo:
    params: CrawlParams
    finished_at: str | None
    directory: Path

    def records(self) -> list[dict[str, Any]]:
        """The journal, read without taking ownership (for listing a running crawl)."""
        path = self.directory / "journal.jsonl"
        return read_journal(path) if path.exists() else []


class CrawlStore:
    """The state dir: create, open and find crawls by id or fingerprint."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def create(self, params: CrawlParams) -> CrawlJournal:
        directory = self.root / params.crawl_id
        if (directory / "crawl.json").exists():
            raise CrawlStateError(f"crawl {params.crawl_id} already exists; resume it with --resume")
        directory.mkdir(parents=True, exist_ok=True)
        write_atomic(directory / "crawl.json", _crawl_doc(params, None))
        return CrawlJournal(directory, params, None)

    def info(self, crawl_id: str) -> CrawlInfo:
        directory = self.root / crawl_id
        try:
            doc = orjson.loads((directory / "crawl.json").read_bytes())
        except FileNotFoundError:
            raise CrawlStateError(f"no saved crawl {crawl_id!r} under {self.root}") from None
        return CrawlInfo(CrawlParams.from_json(doc), doc.get("finished_at"), directory)

    def open(self, crawl_id: str) -> CrawlJournal:
        info = self.info(crawl_id)
        return CrawlJournal(info.directory, info.params, info.finished_at)

    def list(self) -> list[CrawlInfo]:
        """Every saved crawl, oldest first."""
        if not self.root.is_dir():
            return []
        found = [self.info(d.name) for d in self.root.iterdir() if (d / "crawl.json").is_file()]
        return sorted(found, key=lambda i: i.params.created_at)

    def find_unfinished(self, fingerprint: str) -> CrawlInfo | None:
        """The newest unfinished crawl with these parameters, if any."""
        matches = [i for i in self.list() if i.finished_at is None and i.params.fingerprint == fingerprint]
        return matches[-1] if matches else None


def read_roots(lines: Sequence[str]) -> tuple[str, ...]:
    """Roots from a file's lines: one per line, blank lines and ``#`` comments skipped, no repeats."""
    roots = [" ".join(line.split()) for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return tuple(dict.fromkeys(roots))
