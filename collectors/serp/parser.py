"""SERP parser: a result page -> status, result estimate, language and components in page order.

Contract of :func:`parse_serp` (``engine``, ``html`` as str or bytes):

- Pure and total: it never raises, whatever the input. A page it cannot read gives
  status ``error`` with a ``detail``; a component that fails to parse becomes
  ``unknown`` plus a :class:`ComponentError` record (with traceback) in ``errors``.
- ``status``: ``captcha`` (a CAPTCHA / unusual-traffic page), ``blocked`` (HTTP 429
  or 403 without a CAPTCHA, or a consent interstitial instead of results: the engine
  withholds results until someone acts), ``error`` (HTTP 4xx/5xx, not a result page,
  unreadable) or ``ok`` (a result page, possibly with no results at all).
- ``components``: ranked 1.. in page order, which is the order of the sections in
  the engine's rules file (top, main, bottom, side, as laid out on the page) and
  document order inside a section; at most ``MAX_COMPONENTS`` (the schema's rank
  limit). Each has a ``section``, a ``type`` from ``types.COMPONENT_TYPES``, a
  normalized primary ``url`` ("" when it has none) and a ``title``.
- What is where lives in ``rules/<engine>.toml`` (see ``rules``), not here.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import re
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from selectolax.lexbor import LexborHTMLParser, LexborNode

from collectors.common.exceptions import CrawlConfigError
from collectors.serp.rulebook import EngineRules, Rule, load_rules
from collectors.serp.types import UNKNOWN, Section
from collectors.serp.urls import normalize_url

log = logging.getLogger(__name__)

Status = Literal["ok", "captcha", "blocked", "error"]
MAX_BYTES = 8 * 1024 * 1024
MAX_COMPONENTS = 100
MAX_TITLE = 512
CRASH_PREFIX = "parser crashed: "
"""``detail`` prefix of a parser bug caught by the safety net (the fuzz tests forbid it)."""

_SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "link", "meta", "input", "br", "hr"})
_CHARSET = re.compile(rb"""charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""")
_NUMBER = re.compile(r"\d{1,3}(?:[.,\u00a0\u202f\u2009' ]\d{3})+|\d+")
_LANG = re.compile(r"^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8}){0,4}$")
_FALLBACK_TITLE = "h2, h3, [role='heading']"


@dataclass(frozen=True)
class Component:
    rank: int
    section: Section
    type: str
    url: str
    title: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "section": self.section,
            "type": self.type,
            "url": self.url,
            "title": self.title,
        }


@dataclass(frozen=True)
class ComponentError:
    """A component that failed to parse: where, under which rule, and why."""

    section: str
    item: int
    rule: str
    error: str
    traceback: str


@dataclass(frozen=True)
class ParsedSerp:
    status: Status
    result_estimate: int | None = None
    language: str | None = None
    components: tuple[Component, ...] = ()
    detail: str = ""
    errors: tuple[ComponentError, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "status": self.status,
            "result_estimate": self.result_estimate,
            "language": self.language,
            "components": [c.to_json() for c in self.components],
        }
        if self.detail:
            doc["detail"] = self.detail
        return doc


def parse_serp(engine: str, html: str | bytes, *, http_status: int = 200) -> ParsedSerp:
    """Parse one result page of ``engine``; see the module docstring for the contract."""
    try:
        rules = load_rules(engine)
    except CrawlConfigError as exc:
        return ParsedSerp("error", detail=str(exc))
    try:
        return _parse(rules, decode(html), http_status)
    except Exception as exc:  # the safety net: record, never stop a crawl
        log.exception("SERP parser crashed on a %s page", engine)
        return ParsedSerp("error", detail=f"{CRASH_PREFIX}{type(exc).__name__}: {exc}"[:300])


def decode(html: str | bytes) -> str:
    """Text of a page: UTF-8 unless a ``charset`` near the top says otherwise; bad bytes replaced."""
    if isinstance(html, str):
        return html[:MAX_BYTES]
    body = bytes(html[:MAX_BYTES])
    encoding = "utf-8"
    if m := _CHARSET.search(body[:4096]):
        with contextlib.suppress(LookupError):
            encoding = codecs.lookup(m[1].decode("ascii")).name
    return body.decode(encoding, errors="replace").replace("\x00", "\ufffd")


def parse_estimate(text: str) -> int | None:
    """The engine's "About 1,230,000 results" figure (any digit grouping); None when absent."""
    text = re.sub(r"\([^)]*\)", " ", text)  # "(0.48 seconds)"
    values = [int(re.sub(r"\D", "", n)) for n in _NUMBER.findall(text)]
    best = max(values, default=None)
    return best if best is not None and best < 2**63 else None


def _parse(rules: EngineRules, text: str, http_status: int) -> ParsedSerp:
    doc = LexborHTMLParser(text)
    language = _language(doc)
    page = rules.page
    result_page = any(doc.css_first(s) is not None for s in page.result_page)
    words = "" if result_page else _words(doc)  # block phrases count only off result pages
    if any(doc.css_first(s) is not None for s in page.captcha) or any(t in words for t in page.captcha_text):
        return ParsedSerp("captcha", language=language, detail="CAPTCHA / unusual traffic page")
    if http_status in (403, 429):
        return ParsedSerp("blocked", language=language, detail=f"HTTP {http_status}")
    if http_status >= 400 or http_status < 100:
        return ParsedSerp("error", language=language, detail=f"HTTP {http_status}")
    if not result_page:
        if any(doc.css_first(s) is not None for s in page.consent) or any(
            t in words for t in page.consent_text
        ):
            return ParsedSerp("blocked", language=language, detail="consent interstitial instead of results")
        return ParsedSerp("error", language=language, detail="not a result page")
    found, errors = _components(doc, rules)
    detail = (
        f"kept the first {MAX_COMPONENTS} of {len(found)} components" if len(found) > MAX_COMPONENTS else ""
    )
    components = tuple(
        Component(rank, section, type_, url, title)
        for rank, (section, type_, url, title) in enumerate(found[:MAX_COMPONENTS], start=1)
    )
    return ParsedSerp("ok", _estimate(doc, rules), language, components, detail, tuple(errors))


def _words(doc: LexborHTMLParser) -> str:
    root = doc.root
    return " ".join(root.text(separator=" ").split()).lower() if root is not None else ""


def _language(doc: LexborHTMLParser) -> str | None:
    html = doc.css_first("html")
    lang = ((html.attributes.get("lang") if html is not None else None) or "").strip()
    return lang if _LANG.match(lang) else None


def _estimate(doc: LexborHTMLParser, rules: EngineRules) -> int | None:
    for selector in rules.page.estimate:
        node = doc.css_first(selector)
        if node is not None:
            return parse_estimate(node.text(separator=" "))
    return None


def _ancestors(node: LexborNode) -> Iterator[LexborNode]:
    parent = node.parent
    for _ in range(10_000):  # documents are trees; the bound only guards against surprises
        if parent is None:
            return
        yield parent
        parent = parent.parent


def _is(node: LexborNode, selector: str) -> bool:
    """Does ``node`` itself match (``css_matches`` also looks inside it)?"""
    return any(n.mem_id == node.mem_id for n in node.css(selector))


def _top_level(nodes: Iterable[LexborNode]) -> list[LexborNode]:
    """Drop nodes nested in another of the same list (a result inside a result)."""
    listed = list(nodes)
    ids = {n.mem_id for n in listed}
    return [n for n in listed if not any(a.mem_id in ids for a in _ancestors(n))]


def _skip(item: LexborNode, rules: EngineRules) -> bool:
    if item.tag in _SKIP_TAGS or any(_is(item, s) for s in rules.page.ignore):
        return True
    return not item.text(strip=True) and item.css_first("a[href]") is None


Found = tuple[Section, str, str, str]
"""(section, type, url, title) of one component, before ranking."""


def _components(doc: LexborHTMLParser, rules: EngineRules) -> tuple[list[Found], list[ComponentError]]:
    found: list[Found] = []
    errors: list[ComponentError] = []
    seen: set[int] = set()
    for section in rules.sections:
        for root in doc.css(section.root):
            if root.mem_id in seen or any(a.mem_id in seen for a in _ancestors(root)):
                continue  # already inside an earlier section
            seen.add(root.mem_id)
            for index, item in enumerate(root.iter()):
                seen.add(item.mem_id)
                if _skip(item, rules):
                    continue
                rule: Rule | None = None
                try:
                    rule = _classify(item, section.name, rules)
                    found.extend(_extract(item, section.name, rule, rules.base_url))
                except Exception as exc:
                    log.warning("%s component %d of %s failed to parse", rules.engine, index, section.name)
                    errors.append(
                        ComponentError(
                            section.name,
                            index,
                            rule.type if rule else UNKNOWN,
                            f"{type(exc).__name__}: {exc}",
                            traceback.format_exc(),
                        )
                    )
                    found.append((section.name, UNKNOWN, "", ""))
    return found, errors


def _classify(item: LexborNode, section: Section, rules: EngineRules) -> Rule | None:
    """The first rule that claims the item, or None (``unknown``)."""
    for rule in rules.rules:
        if (not rule.within or section in rule.within) and item.css_matches(rule.match):
            return rule
    return None


def _extract(item: LexborNode, section: Section, rule: Rule | None, base: str) -> list[Found]:
    if rule is None:
        return [(section, UNKNOWN, _link(item, "a[href]", base), _title(item, _FALLBACK_TITLE))]
    nodes = _top_level(item.css(rule.each)) if rule.each else []
    where = rule.section or section
    return [(where, rule.type, _link(n, rule.link, base), _title(n, rule.title)) for n in nodes or [item]]


def _link(node: LexborNode, selector: str, base: str) -> str:
    """The first link under ``selector`` that normalizes to a web URL (``data-pcu``: Google's
    landing page of an ad, whose ``href`` is the click tracker)."""
    if not selector:
        return ""
    for anchor in node.css(selector)[:20]:
        attrs = anchor.attributes
        for name in ("data-pcu", "href"):
            url = normalize_url(attrs.get(name) or "", base)
            if url:
                return url
    return ""


def _title(node: LexborNode, selector: str) -> str:
    if not selector:
        return ""
    found = node.css_first(selector)
    return " ".join(found.text(separator=" ").split())[:MAX_TITLE] if found is not None else ""
