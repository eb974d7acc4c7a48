"""Per-engine page rules, loaded from ``rules/<engine>.toml``: engines change their HTML, code should not.

A rules file has four parts (see ``rules/google.toml`` for a commented example):

- ``base_url``: what relative links resolve against.
- ``[page]``: selectors and texts that decide the page's status (CAPTCHA, consent
  interstitial, result page), the result-estimate element, and items to ignore.
- ``[[sections]]``, in page order: a section name (top, main, bottom, side) and the
  CSS selector of its root(s). Each element child of a root is one *item*.
- ``[organic]``: how organic results are found, structurally (a heading inside a link in
  the main results column), so that a redesign with new class names still finds them;
  see :class:`OrganicRules`. These rules are exported to the browser extension, which
  must evaluate them exactly as the parser does (``querySelectorAll`` and ``closest``).
- ``[[rules]]``, the ordered classifier of everything else: the first rule whose ``match`` selector
  matches an item (or something inside it) gives the item its ``type``. ``each``
  splits an item into one component per match (a block of ads, a group of results);
  ``link`` and ``title`` select the primary link and title inside each component
  (no ``link``: the component has none). ``within`` limits a rule to some sections,
  ``section`` reports another section (Bing puts top and bottom ads in one list).

Files are read on first use (not at import), validated (types from ``types``, CSS
selectors compiled), and cached.
"""

from __future__ import annotations

import functools
import re
import tomllib
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from selectolax.lexbor import LexborHTMLParser, SelectolaxError

from collectors.common.exceptions import CrawlConfigError
from collectors.serp.types import BY_NAME, Section

_PROBE = LexborHTMLParser("<html><body><div></div></body></html>")


def _check_selector(value: str) -> str:
    if value:
        try:
            _PROBE.css(value)
        except SelectolaxError as exc:
            raise ValueError(f"bad CSS selector {value!r}: {exc}") from None
    return value


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PageRules(_Frozen):
    result_page: tuple[str, ...]
    """Any of these present: a result page (possibly without results)."""
    estimate: tuple[str, ...] = ()
    captcha: tuple[str, ...] = ()
    captcha_text: tuple[str, ...] = ()
    """Lowercase phrases of a CAPTCHA / unusual-traffic page."""
    consent: tuple[str, ...] = ()
    consent_text: tuple[str, ...] = ()
    """Lowercase phrases of a consent interstitial (only when no result page is found)."""
    ignore: tuple[str, ...] = ()
    """Items matching these are not components (hidden headings, spacers)."""
    no_results: tuple[str, ...] = ()
    """The engine's "no results" notice: a page with it and no blocks is an empty success."""

    @field_validator("result_page", "estimate", "captcha", "consent", "ignore", "no_results")
    @classmethod
    def _selectors(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_check_selector(v) for v in value)


class SectionRoot(_Frozen):
    name: Section
    root: str

    @field_validator("root")
    @classmethod
    def _selector(cls, value: str) -> str:
        return _check_selector(value)


class OrganicRules(_Frozen):
    """Organic results by structure, evaluated the same way in Python and in the browser.

    In the first ``column`` that exists, every match of ``anchor`` (or its nearest
    ancestor ``a[href]``) is a result's primary link, unless it lies inside an
    ``exclude`` match (ads, carousels, question boxes, the side column), inside a
    ``sub_result`` match below the column (sitelinks, indented same-site results: they
    belong to the result they sit in), or is the engine's own navigation: it leads to
    one of ``engine_hosts`` at a path ``engine_paths`` matches (another search, an image
    viewer). The engine's other pages are results like any site's: for "google" the
    first results are www.google.com, its Maps and Account pages, and an audit of
    self-preferencing counts them. Class names may appear, but only as hints in ``exclude``.
    """

    column: tuple[str, ...] = Field(min_length=1)
    anchor: str = Field(min_length=1)
    title: str = ""
    """Selector of the title inside the anchor's match ("" : the match's own text)."""
    exclude: tuple[str, ...] = ()
    sub_result: tuple[str, ...] = ()
    engine_hosts: str = Field(min_length=1)
    """A regular expression (Python and JavaScript syntax alike) on the link's host."""
    engine_paths: str = Field(min_length=1)
    """A regular expression on the path of a link to one of ``engine_hosts``: its navigation."""

    @field_validator("column", "exclude", "sub_result")
    @classmethod
    def _selectors(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_check_selector(v) for v in value)

    @field_validator("anchor", "title")
    @classmethod
    def _selector(cls, value: str) -> str:
        return _check_selector(value)

    @field_validator("engine_hosts", "engine_paths")
    @classmethod
    def _pattern(cls, value: str) -> str:
        if not re.fullmatch(r"[\w./^$()|?:\\\[\]{},+*-]+", value):
            raise ValueError("a pattern may use only characters both Python and JavaScript read alike")
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"bad regular expression: {exc}") from None
        return value


class Rule(_Frozen):
    type: str
    match: str = Field(min_length=1)
    each: str = ""
    link: str = ""
    title: str = ""
    within: tuple[Section, ...] = ()
    section: Section | None = None

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value == "organic":
            raise ValueError("organic results are found by [organic], not by a classifier rule")
        if value not in BY_NAME:
            raise ValueError(f"unknown component type {value!r}; known: {', '.join(BY_NAME)}")
        return value

    @field_validator("match", "each", "link", "title")
    @classmethod
    def _selector(cls, value: str) -> str:
        return _check_selector(value)


class EngineRules(_Frozen):
    engine: str
    base_url: str
    page: PageRules
    sections: tuple[SectionRoot, ...] = Field(min_length=1)
    organic: OrganicRules
    rules: tuple[Rule, ...] = Field(min_length=1)


def rules_engines() -> tuple[str, ...]:
    """Engines that have a rules file."""
    folder = resources.files("collectors.serp") / "rules"
    return tuple(sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")))


def parse_rules(text: str, source: str = "rules") -> EngineRules:
    """Validate one rules document; errors name the file and the field."""
    try:
        return EngineRules.model_validate(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise CrawlConfigError(f"{source}: not valid TOML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_input=False)
        )
        raise CrawlConfigError(f"{source}: {problems}") from None


@functools.cache
def load_rules(engine: str) -> EngineRules:
    """The packaged rules of ``engine`` (read once)."""
    if engine not in rules_engines():
        raise CrawlConfigError(f"no SERP rules for engine {engine!r}; known: {', '.join(rules_engines())}")
    path = resources.files("collectors.serp") / "rules" / f"{engine}.toml"
    rules = parse_rules(path.read_text(encoding="utf-8"), f"rules/{engine}.toml")
    if rules.engine != engine:
        raise CrawlConfigError(f"rules/{engine}.toml says engine = {rules.engine!r}")
    return rules


EXPORT_FORMAT = "auditstream-serp-rules/1"


def export_rules(engine: str) -> dict[str, object]:
    """The rules of ``engine`` as JSON for the browser extension (``extension/lib/serp_rules.js``).

    The same selectors and predicates, evaluated there with ``querySelectorAll`` and
    ``closest``; ``format`` changes when the meaning of a field does.
    """
    rules = load_rules(engine)
    return {"format": EXPORT_FORMAT, **rules.model_dump(mode="json")}
