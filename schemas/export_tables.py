"""What an export of a study holds, and how each of its tables is read a page at a time.

A study is what a family's report selects (``auditstream report ...``):

- ``arrangement``: an experiment id (``report experiment ID``): the extension events and
  onboarding answers of that experiment and its derived tables (``experiment_id``);
- ``autocomplete``: a crawl id prefix (``report autocomplete --study``; crawl ids start
  with their study, ``<study>-<time>-<hex>``): the crawl events and analyses of the crawls
  whose ``crawl_id`` starts with it (``''``: every crawl);
- ``personalization``: a study id (``report personalization --study``): its SERP snapshots
  and their comparisons (``study_id``).

Each kind has its raw events (``events`` set: read from the family's raw table with
``FINAL``, written as ``auditstream import`` reads them) and its result tables (the views
of ``schemas/clickhouse/README.md``, which documents every column). A table is read in
pages ordered by ``key``, which is unique per row and never NULL or NaN; the next page
starts after the previous page's last key (keyset paging), so each page is a bounded
query, however large the study, and no row is read twice or skipped. The event tables'
keys follow their raw tables' sorting keys, so a page is read in order from the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from schemas.sql import quote
from schemas.topics import AUTOCOMPLETE, EXTENSION, PANEL, SERP, Family

MAX_CURSOR_TEXT = 4096
"""The longest text value a cursor may carry (a key value is an id, a query or a root)."""


class BadCursor(ValueError):
    """A page's ``after`` that is not a key of the table (a client's mistake: a 400)."""


@dataclass(frozen=True)
class ExportTable:
    """One table of a study's export: ``source`` is a table, a view or a subquery, read
    where the study's condition holds, in ``key`` order."""

    name: str
    source: str
    key: tuple[str, ...]
    events: Family | None = None
    """The event family whose raw rows these are (written as importable events)."""
    docs: tuple[str, ...] = ()
    """The sections of ``schemas/clickhouse/README.md`` that describe it (default: its name)."""

    @property
    def documented_as(self) -> tuple[str, ...]:
        return self.docs or (self.name,)


@dataclass(frozen=True)
class StudyKind:
    name: str
    study: str
    """What the study id is, in words."""
    column: str
    """The column that selects a study's rows."""
    prefix: bool = False
    """The study is a prefix of ``column`` (else equal to it); a prefix may be empty."""
    tables: tuple[ExportTable, ...] = ()

    def where(self, study: str) -> str:
        if self.prefix:
            return f"startsWith({self.column}, {quote(study)})"
        return f"{self.column} = {quote(study)}"

    def table(self, name: str) -> ExportTable | None:
        return next((t for t in self.tables if t.name == name), None)

    @property
    def event_tables(self) -> tuple[ExportTable, ...]:
        return tuple(t for t in self.tables if t.events is not None)

    @property
    def result_tables(self) -> tuple[ExportTable, ...]:
        return tuple(t for t in self.tables if t.events is None)


def _results(*rows: tuple[str, tuple[str, ...]]) -> tuple[ExportTable, ...]:
    return tuple(ExportTable(name, name, key) for name, key in rows)


_AGES = ("arm", "install_age_days", "identified")
_CONTEXT = ("ads_present", "box_present", "ssr_c1_c2")
_SHOCKS = (
    "(SELECT splitByChar('/', subject)[1] AS engine, substring(subject, position(subject, '/') + 1) "
    "AS crawl_id, alert_id, created_at, severity, summary, details FROM alerts FINAL "
    "WHERE kind = 'autocomplete_shock')"
)

ARRANGEMENT = StudyKind(
    "arrangement",
    "an experiment id",
    "experiment_id",
    tables=(
        ExportTable(
            "extension_events",
            "raw_extension_events FINAL",
            ("engine", "received_at", "event_id"),
            EXTENSION,
        ),
        ExportTable(
            "install_profiles",
            "raw_install_profiles FINAL",
            ("install_id", "received_at", "event_id"),
            PANEL,
        ),
        *_results(
            ("clicks_by_rank_1m", ("engine", "window_start", "arm", "original_rank")),
            (
                "arrangement_install_day",
                ("engine", "install_id", "slice_start", *_AGES, *_CONTEXT, "n_candidates_bucket"),
            ),
            (
                "arrangement_install",
                (
                    "engine",
                    "install_id",
                    *_AGES,
                    *_CONTEXT,
                    "n_candidates_quintile",
                    "no_ads_no_box_quintile",
                ),
            ),
            ("arrangement_install_subset", ("engine", "subset", "install_id", *_AGES)),
            ("arrangement_replicates_1h", ("engine", "hour_start", *_AGES)),
            ("arrangement_looks", ("engine", "selection", "look_day", "arm")),
            ("page_composition", ("engine", "pages_of")),
        ),
        ExportTable(
            "planted_values",
            "planted_values FINAL",
            ("engine", "subset", "baseline", "arm", "quantity", "rank"),
        ),
    ),
)

_CRAWL = ("engine", "root", "crawl_id")
AUTOCOMPLETE_STUDY = StudyKind(
    "autocomplete",
    "a crawl id prefix ('' = every crawl)",
    "crawl_id",
    prefix=True,
    tables=(
        ExportTable(
            "autocomplete_events",
            "raw_autocomplete_events FINAL",
            ("engine", "root", "received_at", "event_id"),
            AUTOCOMPLETE,
            ("autocomplete_nodes", "crawl_markers"),
        ),
        *_results(
            ("autocomplete_crawls", _CRAWL),
            ("autocomplete_crawls_full", _CRAWL),
            ("autocomplete_churn", (*_CRAWL, "rank", "depth")),
            ("autocomplete_churn_full", (*_CRAWL, "rank", "depth")),
            ("autocomplete_edges", (*_CRAWL, "source", "rank")),
            ("autocomplete_node_structure", (*_CRAWL, "node")),
            ("autocomplete_node_structure_full", (*_CRAWL, "node")),
            (
                "autocomplete_association_links",
                ("engine", "network", "crawl_id", "root", "source_reduced", "target_reduced"),
            ),
        ),
        ExportTable("autocomplete_shocks", _SHOCKS, ("engine", "crawl_id"), docs=("Shocks", "alerts")),
    ),
)

PERSONALIZATION = StudyKind(
    "personalization",
    "a study id",
    "study_id",
    tables=(
        ExportTable(
            "serp_snapshots",
            "raw_serp_snapshots FINAL",
            ("received_at", "event_id"),
            SERP,
            ("serp_snapshots",),
        ),
        *_results(
            ("personalization_rounds", ("round_id", "query")),
            ("personalization_pairs", ("round_id", "query", "links", "kind", "profile_a", "profile_b")),
            ("personalization_consistency", ("profile_id", "query", "links", "day")),
            ("personalization_overall", ("links",)),
            ("personalization_by_treatment", ("links", "treatment")),
            ("personalization_by_rank", ("links", "treatment", "rank")),
            ("personalization_by_category", ("links", "query_category", "treatment")),
            ("personalization_by_query", ("links", "query", "treatment")),
            ("personalization_rank1", ("links", "kind", "treatment", "direction", "rank")),
            ("personalization_treatment_groups", ("links", "treatment")),
            (
                "personalization_consistency_days",
                ("links", "profile_id", "role", "treatment", "previous_day", "day"),
            ),
        ),
    ),
)

KINDS: dict[str, StudyKind] = {k.name: k for k in (ARRANGEMENT, AUTOCOMPLETE_STUDY, PERSONALIZATION)}


def _literal(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise BadCursor("a key value is text or an integer")
    if isinstance(value, str):
        if len(value) > MAX_CURSOR_TEXT:
            raise BadCursor("a key value is too long")
        return quote(value)
    return str(value)


def after_condition(key: Sequence[str], after: Sequence[Any]) -> str:
    """Rows whose ``key`` comes after ``after`` in the key's order, written out column by
    column (``a > x OR (a = x AND b > y) ...``), which ClickHouse's primary key analysis
    reads, as it does not a tuple comparison."""
    if not isinstance(after, list) or len(after) != len(key):
        raise BadCursor(f"after is a JSON array of {len(key)} values: the key {', '.join(key)}")
    values = [_literal(v) for v in after]
    parts = []
    for i, column in enumerate(key):
        equal = [f"{key[j]} = {values[j]}" for j in range(i)]
        parts.append("(" + " AND ".join([*equal, f"{column} > {values[i]}"]) + ")")
    return "(" + " OR ".join(parts) + ")"


def page_sql(kind: StudyKind, table: ExportTable, study: str, after: Sequence[Any] | None, limit: int) -> str:
    """One page of ``table``: up to ``limit`` rows of the study after the key ``after``."""
    where = kind.where(study)
    if after is not None:
        where += " AND " + after_condition(table.key, after)
    order = ", ".join(table.key)
    return f"SELECT * FROM {table.source} WHERE {where} ORDER BY {order} LIMIT {int(limit)}"


def count_sql(kind: StudyKind, table: ExportTable, study: str) -> str:
    return f"SELECT count() FROM {table.source} WHERE {kind.where(study)}"


def columns_sql(kind: StudyKind, table: ExportTable, study: str) -> str:
    """No rows, only the table's columns and their types."""
    return f"SELECT * FROM {table.source} WHERE {kind.where(study)} LIMIT 0"


def next_after(table: ExportTable, columns: Sequence[str], rows: Sequence[Sequence[Any]], limit: int) -> Any:
    """The cursor after a page: its last row's key, or None when the page was the last
    (fewer rows than asked for)."""
    if len(rows) < limit or not rows:
        return None
    last = rows[-1]
    return [last[columns.index(k)] for k in table.key]
