"""Per-engine page rules, loaded from ``rules/<engine>.toml``: engines change their HTML, code should not.

A rules file has four parts (see ``rules/google.toml`` for a commented example):

- ``base_url``: what relative links resolve against.
- ``[page]``: selectors and texts that decide the page's status (CAPTCHA, consent
  interstitial, result page), the result-estimate element, and items to ignore.
- ``[[sections]]``, in page order: a section name (top, main, bottom, side) and the
  CSS selector of its root(s). Each element child of a root is one *item*.
- ``[[rules]]``, the ordered classifier: the first rule whose ``match`` selector
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

    @field_validator("result_page", "estimate", "captcha", "consent", "ignore")
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
