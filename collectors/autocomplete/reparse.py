"""Re-parse a saved crawl's archived responses with the current parsers.

The crawled tree (which queries were submitted, their parents and depths) is kept as
it was: a parser fix cannot send the requests the old parse did not make. Each node's
suggestions and status are rebuilt from its archived body, and the markers' counts
are recounted. Event ids are the original ones (or derived from ``as_crawl_id``), so
the output can be compared with, or replace, what the crawl emitted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from collectors.autocomplete.bfs import Node
from collectors.autocomplete.crawler import FAILED
from collectors.autocomplete.events import completed_event, node_event, started_event
from collectors.autocomplete.parsers import ParsedSuggestion, Status, parse_response
from collectors.autocomplete.state import CrawlJournal
from collectors.common.archive import Archive
from collectors.common.exceptions import ArchiveError


@dataclass
class ReparseStats:
    nodes: int = 0
    changed: int = 0
    """Nodes whose suggestions or status differ from what the crawl recorded."""
    unarchived: int = 0
    """Nodes with no archived answer (network errors, or a missing file): kept as recorded."""
    problems: list[str] = field(default_factory=list)


def reparse_events(
    journal: CrawlJournal, archive: Archive, stats: ReparseStats, *, as_crawl_id: str | None = None
) -> Iterator[dict[str, Any]]:
    """Corrected events of a crawl in journal order: markers, then nodes as crawled."""
    p = journal.params
    crawl_id = as_crawl_id or p.crawl_id
    formats = dict(p.engines)
    counts: dict[tuple[str, str], list[int]] = {}
    for record in journal.records:
        engine, root, kind = record["engine"], record["root"], record["kind"]
        common = {"crawl_id": crawl_id, "engine": engine, "root": root}
        if kind == "started":
            yield started_event(
                **common, study_id=p.study, max_depth=p.max_depth, trimming_rule=p.trimming_rule
            )
        elif kind == "node":
            status, suggestions = _reparse_node(record, formats[engine], archive, stats)
            c = counts.setdefault((engine, root), [0, 0, 0])
            c[0] += 1
            c[1] += len(suggestions)
            c[2] += status in FAILED
            node = Node(record["query"], record["parent"], record["depth"], record["rank"])
            yield node_event(
                **common, node=node, suggestions=suggestions, status=status, raw_ref=record["raw_ref"]
            )
        elif kind == "completed":
            n_nodes, n_edges, n_failed = counts.get((engine, root), [0, 0, 0])
            yield completed_event(
                **common,
                study_id=p.study,
                max_depth=p.max_depth,
                trimming_rule=p.trimming_rule,
                n_nodes=n_nodes,
                n_edges=n_edges,
                n_failed=n_failed,
            )


def _reparse_node(
    record: dict[str, Any], fmt: str, archive: Archive, stats: ReparseStats
) -> tuple[Status, tuple[ParsedSuggestion, ...]]:
    stats.nodes += 1
    old = tuple(ParsedSuggestion(**s) for s in record["suggestions"])
    if not record["raw_ref"]:
        stats.unarchived += 1
        return record["status"], old
    try:
        saved = archive.get(record["raw_ref"])
    except ArchiveError as exc:
        stats.unarchived += 1
        stats.problems.append(str(exc))
        return record["status"], old
    parsed = parse_response(
        saved.meta.get("format", fmt),
        saved.body,
        int(saved.meta.get("status", 200)),
        query=record["query"],
        charset=saved.meta.get("charset"),
    )
    if parsed.status != record["status"] or parsed.suggestions != old:
        stats.changed += 1
    return parsed.status, parsed.suggestions
