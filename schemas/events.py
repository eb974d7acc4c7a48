"""Pydantic v2 models for the three event families of docs/method.md (each family's section).

The table of event types (model, family, topic, raw table) is ``schemas/event_types.py``.

Models are strict where it matters for privacy and correctness: unknown fields
are rejected, scalars are not coerced from strings, and free-text fields exist
only on crawler events (crawler queries are not personal data). Extension events
carry only patterned identifiers and counts, so a URL or query text cannot slip
through a field that was meant for something else.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictBool,
    StrictInt,
    StringConstraints,
    model_validator,
)

SCHEMA_VERSION = 1

Ident = Annotated[str, StringConstraints(strict=True, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:=-]{0,63}$")]
"""Short machine identifier: experiment, arm, study, round, profile, crawl ids."""
Engine = Annotated[str, StringConstraints(strict=True, pattern=r"^[a-z][a-z0-9_]{1,31}$")]
InstallId = Annotated[str, StringConstraints(strict=True, pattern=r"^[A-Za-z0-9_-]{8,64}$")]
Version = Annotated[str, StringConstraints(strict=True, pattern=r"^[0-9]{1,5}(\.[0-9]{1,5}){0,3}$")]
"""The extension's manifest version, as Chrome requires it: one to four dot-separated
integers. A free build tag ("1.0+johns.bank.com") could carry words, so there is none."""
UiLang = Annotated[str, StringConstraints(strict=True, pattern=r"^[a-z]{2,3}(-[A-Z]{2})?$")]
Market = Annotated[str, StringConstraints(strict=True, pattern=r"^([a-z]{2,3}(-[a-z]{2})?)?$")]
"""The engine's coarse market, as the extension derives it (``extension/lib/markets.js``):
Google's search domain's last label ("de", "uk" for google.co.uk, "com" for google.com),
Bing's ``mkt`` parameter lowercased ("de-de") or its ``cc`` ("de"); "" when the page does
not say (and from extensions older than the field). A code, never a host or a URL."""
Text = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=512)]
Rank = Annotated[StrictInt, Field(ge=1, le=100)]
UInt32 = Annotated[StrictInt, Field(ge=0, le=2**32 - 1)]
UInt64 = Annotated[StrictInt, Field(ge=0, le=2**64 - 1)]

# Values are checked against what their ClickHouse column can hold and stored in one
# canonical form (the row written is serialised from the model): a value a column would
# clamp or refuse is rejected here, with a reason, never changed or lost after a 202.
DATE_MIN, DATE_MAX = date(1970, 1, 1), date(2149, 6, 6)
"""The range of ClickHouse's ``Date``."""
TIME_MIN = datetime(1900, 1, 1, tzinfo=UTC)
TIME_MAX = datetime(2299, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
"""The range of ``DateTime64(3, 'UTC')``."""


def _calendar_day(value: Any) -> Any:
    """Only ``YYYY-MM-DD`` text (or, from Python, a date): a datetime or a number is not a day."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if not isinstance(value, str) or len(value) != 10 or value[4] != "-" or value[7] != "-":
        raise ValueError("a day is written YYYY-MM-DD")
    return value


def _in_date_range(value: date) -> date:
    if not DATE_MIN <= value <= DATE_MAX:
        raise ValueError(f"a day must lie between {DATE_MIN} and {DATE_MAX}")
    return value


def _in_time_range(value: datetime) -> datetime:
    try:
        utc = value.astimezone(UTC)
    except OverflowError:  # year 1 or 9999 with an offset: not a ValueError, so not a rejection
        raise ValueError("a timestamp must lie between 1900-01-01 and 2299-12-31") from None
    if not TIME_MIN <= utc <= TIME_MAX:
        raise ValueError("a timestamp must lie between 1900-01-01 and 2299-12-31")
    return utc


def utc_text(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


DAY_PATTERN = (
    r"^(?:19[7-9][0-9]|20[0-9][0-9]|21[0-3][0-9]|214[0-8])-[0-9]{2}-[0-9]{2}$"
    r"|^2149-(?:0[1-5]-[0-9]{2}|06-0[1-6])$"
)
"""``DATE_MIN`` to ``DATE_MAX`` for JSON Schema (with ``format: date``, which checks the day
exists): what the validators below enforce, said where a client reads it."""

Day = Annotated[
    date,
    BeforeValidator(_calendar_day),
    AfterValidator(_in_date_range),
    PlainSerializer(date.isoformat),
    Field(
        json_schema_extra={
            "pattern": DAY_PATTERN,
            "description": f"A calendar day, YYYY-MM-DD, from {DATE_MIN} to {DATE_MAX}.",
        }
    ),
]
"""A calendar day: ``YYYY-MM-DD`` within ClickHouse's ``Date`` range."""


def _iso_text(value: Any) -> Any:
    """Only ISO 8601 text (or a datetime built in Python): a number or an epoch in a
    string is not read as a moment, as no scalar is coerced from another kind."""
    if isinstance(value, datetime) or (isinstance(value, str) and _ISO_START.match(value)):
        return value
    raise ValueError("a timestamp is ISO 8601 text, YYYY-MM-DDTHH:MM:SS with a zone")


_ISO_START = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]")

_CLOCK = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
_OFFSET = "(?:[01][0-9]|2[0-3]):[0-5][0-9]"
TIMESTAMP_PATTERN = (
    "^(?:"
    # any moment of the days strictly inside the range, at any offset
    "(?:1900-01-(?:0[2-9]|[12][0-9]|3[01])|1900-(?:0[2-9]|1[0-2])-[0-9]{2}"
    "|19(?:0[1-9]|[1-9][0-9])-[0-9]{2}-[0-9]{2}|2[01][0-9]{2}-[0-9]{2}-[0-9]{2}"
    "|22(?:[0-8][0-9]|9[0-8])-[0-9]{2}-[0-9]{2}|2299-(?:0[1-9]|1[01])-[0-9]{2}|2299-12-(?:[0-2][0-9]|30))"
    rf"[Tt]{_CLOCK}(?:\.[0-9]+)?(?:[Zz]|[+-]{_OFFSET})"
    # the first day at offsets that keep it in UTC, the last at offsets and milliseconds that do
    rf"|1900-01-01[Tt]{_CLOCK}(?:\.[0-9]+)?(?:[Zz]|-{_OFFSET}|\+00:00)"
    rf"|2299-12-31[Tt]{_CLOCK}(?:\.[0-9]{{1,3}})?(?:[Zz]|\+{_OFFSET}|-00:00)"
    ")$"
)
"""JSON Schema's side of ``_in_time_range`` and the text pydantic reads, with ``format:
date-time`` (which checks the day exists): an RFC 3339 timestamp in 1900-2299 (UTC). On the
range's first and last day it admits only the offsets that keep the moment inside in UTC,
and none of the days just outside that an offset brings inside: a little less than the
service takes (``description`` says the exact rule)."""

Timestamp = Annotated[
    AwareDatetime,
    BeforeValidator(_iso_text),
    AfterValidator(_in_time_range),
    PlainSerializer(utc_text),
    Field(
        json_schema_extra={
            "pattern": TIMESTAMP_PATTERN,
            "description": "An RFC 3339 timestamp with its offset, from 1900-01-01T00:00:00Z to "
            "2299-12-31T23:59:59.999Z once in UTC (stored in UTC with milliseconds).",
        }
    ),
]
"""An aware timestamp within ``DateTime64(3)``'s range, stored in UTC with milliseconds."""


def _version_one(value: Any) -> Any:
    """``1`` itself: not ``true`` or ``1.0``, which a Literal would take as 1."""
    if type(value) is not int:
        raise ValueError("schema_version is the integer 1")
    return value


SchemaVersion = Annotated[Literal[1], BeforeValidator(_version_one)]


class _Event(BaseModel):
    """Fields every event carries; the server adds ``received_at``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: SchemaVersion
    event_id: UUID
    sent_at: Timestamp


# --- 2.1 extension events -------------------------------------------------------------


class _PageContext(_Event):
    """The page context shared by ``serp_view`` and ``click`` (no query, no URL)."""

    experiment_id: Ident
    arm: Ident
    engine: Engine
    install_id: InstallId
    install_day: Day
    extension_version: Version
    page_index: Annotated[StrictInt, Field(ge=0, le=100)]
    n_organic: Annotated[StrictInt, Field(ge=0, le=100)]
    ads_top_count: Annotated[StrictInt, Field(ge=0, le=20)]
    box: Literal["none", "top", "side"]
    ssr_positions: Annotated[list[Rank], Field(max_length=20)]
    n_candidates: UInt64 | None = None
    identified: StrictBool
    ui_lang: UiLang
    market: Market = ""


class SerpView(_PageContext):
    """One search result page was shown (the unit of impression mode)."""

    type: Literal["serp_view"]


class Click(_PageContext):
    """One element of the page was clicked (the unit of the paper's click mode)."""

    model_config = ConfigDict(
        json_schema_extra={  # _organic_needs_rank
            "if": {"properties": {"element_type": {"const": "organic"}}, "required": ["element_type"]},
            "then": {"properties": {"original_rank": {"type": "integer"}}, "required": ["original_rank"]},
        }
    )

    type: Literal["click"]
    element_type: Literal["organic", "ad", "shopping_box", "ssr", "other"]
    original_rank: Rank | None = None
    display_rank: Rank | None = None

    @model_validator(mode="after")
    def _organic_needs_rank(self) -> Click:
        if self.element_type == "organic" and self.original_rank is None:
            raise ValueError("an organic click needs original_rank")
        return self


# --- 2.1 the panel: who installed (coarse, optional, once) --------------------------------

AgeBand = Literal["18-24", "25-34", "35-44", "45-54", "55-64", "65+"]
SearchFrequency = Literal["several_daily", "daily", "weekly", "less_often"]
LanguageCode = Annotated[str, StringConstraints(strict=True, pattern=r"^[a-z]{2,3}$")]
CountryCode = Annotated[str, StringConstraints(strict=True, pattern=r"^[A-Z]{2}$")]


ErasureKeyHash = Annotated[str, StringConstraints(strict=True, pattern=r"^[0-9a-f]{64}$")]


class InstallProfile(_Event):
    """The onboarding form, sent once per install: consent, and coarse bins for describing
    and reweighting the panel (the paper's appendix C.3). Every answer is optional; a
    declined consent carries none. Nothing free-text, nothing identifying."""

    model_config = ConfigDict(
        json_schema_extra={  # _declined_answers_nothing
            "if": {"properties": {"consent": {"const": "declined"}}, "required": ["consent"]},
            "then": {
                "properties": {
                    "age_band": {"type": "null"},
                    "search_languages": {"maxItems": 0},
                    "country": {"type": "null"},
                    "search_frequency": {"type": "null"},
                }
            },
        }
    )

    type: Literal["install_profile"]
    install_id: InstallId
    install_day: Day
    extension_version: Version
    experiment_id: Ident
    consent: Literal["given", "declined"]
    age_band: AgeBand | None = None
    search_languages: Annotated[
        list[LanguageCode], Field(max_length=5, json_schema_extra={"uniqueItems": True})
    ] = []
    country: CountryCode | None = None
    """ISO 3166-1 alpha-2: the country the person searches from."""
    search_frequency: SearchFrequency | None = None
    erasure_key_sha256: ErasureKeyHash | None = None
    """The SHA-256 of a random secret the extension keeps: with the secret, and only with it,
    the volunteer can have the install's data erased (``POST /v1/participants/erase-own``)."""

    @model_validator(mode="after")
    def _declined_answers_nothing(self) -> InstallProfile:
        answers = (self.age_band, self.country, self.search_frequency)
        if self.consent == "declined" and (any(a is not None for a in answers) or self.search_languages):
            raise ValueError("a declined consent carries no answers")
        if len(set(self.search_languages)) != len(self.search_languages):
            raise ValueError("search_languages lists each language once")
        return self


# --- 2.2 SERP snapshots ---------------------------------------------------------------


class SerpResult(BaseModel):
    """One component of a result page, in page order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rank: Rank
    type: Annotated[str, StringConstraints(strict=True, pattern=r"^[a-z][a-z0-9_]{0,31}$")]
    url: Annotated[str, StringConstraints(strict=True, max_length=2048)]


KNOWN_LAYOUT = 0.8
"""A parsed result page whose coverage is below this has an unknown layout (crawler metric,
``report personalization``): some blocks, often the organic ones, may be missing."""


class SerpSnapshot(_Event):
    """One profile's result page for one query in one lock-step round."""

    type: Literal["serp_snapshot"]
    study_id: Ident
    round_id: Ident
    profile_id: Ident
    role: Literal["treatment", "control", "control_twin"]
    treatment: Annotated[str, StringConstraints(strict=True, max_length=128)]
    engine: Engine
    query: Text
    query_category: Annotated[str, StringConstraints(strict=True, max_length=64)] = ""
    results: Annotated[list[SerpResult], Field(max_length=200)]
    result_estimate: UInt64 | None = None
    status: Literal["ok", "captcha", "blocked", "error"]
    raw_ref: Annotated[str, StringConstraints(strict=True, max_length=256)] = ""
    coverage: Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=True)] | None = None
    """Share of the page's visible blocks the parser's rules claimed (None: not parsed, or an
    older crawler); below ``KNOWN_LAYOUT`` the page has a layout the rules do not know."""
    consent: Literal["none", "accepted", "rejected", "left", "failed"] = "none"
    """What the crawler did about a consent wall in front of this page: none met, accepted,
    rejected, left as it was, or failed (the wall stayed after pressing its button)."""
    loaded_at: Timestamp | None = None
    """When the page had finished loading (HTTP: the body read; browser: the end of its load
    event, after any consent wall). None: no page came. Per round, ``max - min`` is the load skew."""


# --- 2.3 autocomplete crawls ----------------------------------------------------------


class Suggestion(BaseModel):
    """One suggestion at its 1-based rank in the engine's response."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rank: Rank
    text: Text
    self_loop: StrictBool = False
    type: Annotated[str, StringConstraints(strict=True, max_length=32)] = ""


class AutocompleteNode(_Event):
    """One submitted node of a breadth-first suggestion crawl."""

    type: Literal["autocomplete_node"]
    crawl_id: Ident
    engine: Engine
    root: Text
    query: Text
    parent: Text | None = None
    depth: Annotated[StrictInt, Field(ge=0, le=16)]
    suggestions: Annotated[list[Suggestion], Field(max_length=20)]
    status: Literal["ok", "empty", "blocked", "error"]
    raw_ref: Annotated[str, StringConstraints(strict=True, max_length=256)] = ""


StudyId = Annotated[str, StringConstraints(strict=True, pattern=r"^([A-Za-z0-9][A-Za-z0-9_.:=-]{0,63})?$")]
"""A study's id, or "" for none."""


class _CrawlMarker(_Event):
    crawl_id: Ident
    study_id: StudyId = ""
    """Consecutive crawls of a root are compared within one study ("": crawls without one)."""
    engine: Engine
    root: Text
    max_depth: Annotated[StrictInt, Field(ge=0, le=16)]
    trimming_rule: Literal["first_last_word", "all_words", "any_word", "none"] = "first_last_word"
    """Names in analytics/stats/autocomplete_network.TRIMMING_RULES (a test keeps them equal)."""


class CrawlStarted(_CrawlMarker):
    """A crawl of one root began."""

    type: Literal["crawl_started"]


class CrawlCompleted(_CrawlMarker):
    """A crawl of one root finished; churn compares only completed crawls."""

    type: Literal["crawl_completed"]
    n_nodes: UInt32
    n_edges: UInt32
    n_failed: UInt32 = 0


PRIVACY_FORBIDDEN_FIELDS = frozenset(
    {
        "query",
        "q",
        "query_text",
        "search_terms",
        "url",
        "urls",
        "href",
        "link",
        "links",
        "title",
        "titles",
        "snippet",
        "domain",
        "host",
        "hostname",
        "referrer",
        "referer",
        "email",
        "ip",
        "ip_address",
        "user_agent",
        "cookie",
        "cookies",
        "name",
        "user_id",
        "location",
        "geo",
        "lat",
        "lon",
        "text",
    }
)
"""Fields an extension event must never carry; named so the rejection says why."""
