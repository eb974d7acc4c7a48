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
from urllib.parse import urlsplit

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
_NUMBER = re.compile(r"\d{1,3}(?:[.,\u00a0\u202f\u2009\u066c' ]\d{3})+|\d+")
"""A figure in any script's digits (\\d is Unicode), grouped by any common separator
(U+066C: the Arabic thousands separator)."""
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
    coverage: float | None = None
    """Share of the page's visible blocks some rule claimed (None unless ``ok``): a low
    figure means a layout the rules do not know, the sign that the engine changed."""

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "status": self.status,
            "result_estimate": self.result_estimate,
            "language": self.language,
            "coverage": self.coverage,
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


def click_target(engine: str, html: str | bytes, click: int | str) -> tuple[str, str] | None:
    """The organic result a history step clicks: the ``click``-th one (1-based), or the first
    whose normalized URL contains ``click``, as ``(href as written in the page, normalized
    URL)``; None when the page has no such result (or cannot be read)."""
    try:
        links = organic_links(LexborHTMLParser(decode(html)), load_rules(engine))
    except Exception:  # total like parse_serp: a page it cannot read has nothing to click
        log.warning("no click target read from a %s page", engine, exc_info=True)
        return None
    if isinstance(click, int):
        pick = links[click - 1] if click <= len(links) else None
    else:
        pick = next((link for link in links if click in link[1]), None)
    if pick is None:
        return None
    return pick[0].attributes.get("href") or "", pick[1]


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
    found, errors, coverage = _components(doc, rules)
    detail = (
        f"kept the first {MAX_COMPONENTS} of {len(found)} components" if len(found) > MAX_COMPONENTS else ""
    )
    components = tuple(
        Component(rank, f.section, f.type, f.url, f.title)
        for rank, f in enumerate(found[:MAX_COMPONENTS], start=1)
    )
    return ParsedSerp("ok", _estimate(doc, rules), language, components, detail, tuple(errors), coverage)


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


@dataclass(frozen=True)
class _Found:
    """One component before ranking: where it sits (section, document position) and what it is."""

    section: Section
    position: tuple[int, int]
    """(walk order of the section root it sits in, document order): the page order."""
    type: str
    url: str
    title: str


@dataclass
class _Organic:
    """The organic results of a page, found by ``[organic]`` before the section walk."""

    links: list[tuple[LexborNode, str, str]]  # (link node, url, title) in document order
    under: dict[int, int]  # element mem_id -> how many result links lie inside it (itself included)


def organic_links(doc: LexborHTMLParser, rules: EngineRules) -> list[tuple[LexborNode, str, str]]:
    """Organic results by the structural rule (see ``rulebook.OrganicRules``), in page order.

    The browser extension evaluates the same rules with ``querySelectorAll``/``closest``
    (``extension/lib/serp_rules.js``); a test holds both to the same answers.
    """
    org = rules.organic
    column = next((c for s in org.column if (c := doc.css_first(s)) is not None), None)
    if column is None:
        return []
    excluded = {n.mem_id for s in org.exclude for n in doc.css(s)}
    nested = {n.mem_id for s in org.sub_result for n in column.css(s)}
    engine_host, engine_path = re.compile(org.engine_hosts), re.compile(org.engine_paths)
    out: list[tuple[LexborNode, str, str]] = []
    seen: set[int] = set()
    for match in column.css(org.anchor):
        link = _closest_link(match)
        if link is None or link.mem_id in seen:
            continue
        seen.add(link.mem_id)
        chain = [match, *_ancestors(match)]
        if any(n.mem_id in excluded for n in chain):
            continue
        inside_column = chain[: next(i for i, n in enumerate(chain) if n.mem_id == column.mem_id)]
        if any(n.mem_id in nested for n in inside_column):
            continue
        url = normalize_url(link.attributes.get("href") or "", rules.base_url)
        if not url:
            continue
        target = urlsplit(url)
        if engine_host.search(target.hostname or "") and engine_path.search(target.path):
            continue  # the engine's own navigation (another search), not a result
        heading = match.css_first(org.title) if org.title else match
        title = " ".join(heading.text(separator=" ").split())[:MAX_TITLE] if heading is not None else ""
        out.append((link, url, title))
    return out


def _closest_link(node: LexborNode) -> LexborNode | None:
    """``node.closest("a[href]")`` as the browser has it (the node itself included)."""
    for n in (node, *_ancestors(node)):
        if n.tag == "a" and "href" in n.attributes:
            return n
    return None


def _find_organic(doc: LexborHTMLParser, rules: EngineRules) -> _Organic:
    links = organic_links(doc, rules)
    under: dict[int, int] = {}
    for link, _, _ in links:
        for n in (link, *_ancestors(link)):
            under[n.mem_id] = under.get(n.mem_id, 0) + 1
    return _Organic(links, under)


def _components(
    doc: LexborHTMLParser, rules: EngineRules
) -> tuple[list[_Found], list[ComponentError], float]:
    """Every component in page order, the parse errors, and the page's coverage.

    Organic results come from ``[organic]``; the section walk classifies every other
    block. A block holding one organic result is that result's; a block holding more is
    split into its children, unless a rule claims the block itself (a whole-page
    knowledge panel wraps the results: it is one component, its results are theirs).
    Coverage is the share of the visible blocks that some rule claimed.
    """
    position = {n.mem_id: i for i, n in enumerate(doc.root.traverse())} if doc.root is not None else {}
    organic = _find_organic(doc, rules)
    found: list[_Found] = []
    errors: list[ComponentError] = []
    seen: set[int] = set()
    roots: list[tuple[Section, LexborNode]] = []
    blocks = 0
    for section in rules.sections:
        for root in doc.css(section.root):
            if root.mem_id in seen or any(a.mem_id in seen for a in _ancestors(root)):
                continue  # already inside an earlier section
            seen.add(root.mem_id)
            roots.append((section.name, root))
            blocks += _walk(root, section.name, len(roots) - 1, rules, organic, position, found, errors)
    main = next((i for i, (name, _) in enumerate(roots) if name == "main"), len(roots))
    for link, url, title in organic.links:
        ids = {a.mem_id for a in _ancestors(link)}
        walked = next((i for i, (_, root) in enumerate(roots) if root.mem_id in ids), None)
        blocks += walked is None  # a result outside every section root is a block of its own
        where = roots[walked][0] if walked is not None else "main"
        found.append(
            _Found(
                where,
                (main if walked is None else walked, position.get(link.mem_id, 0)),
                "organic",
                url,
                title,
            )
        )
    found.sort(key=lambda f: f.position)
    unknown = sum(1 for f in found if f.type == UNKNOWN)
    if blocks == 0:
        if any(doc.css_first(s) is not None for s in rules.page.no_results):
            return found, errors, 1.0
        # nothing any rule knows: a layout the rules have not met, never an empty success
        found.append(_Found("main", (0, 0), UNKNOWN, "", ""))
        return found, errors, 0.0
    return found, errors, round(1 - unknown / blocks, 4)


def _walk(
    root: LexborNode,
    section: Section,
    root_index: int,
    rules: EngineRules,
    organic: _Organic,
    position: dict[int, int],
    found: list[_Found],
    errors: list[ComponentError],
) -> int:
    """Classify the blocks under ``root`` into ``found``; the number of blocks seen."""
    blocks = 0
    for index, item in enumerate(root.iter()):
        if _skip(item, rules):
            continue
        if any(_is(item, s) for s in rules.page.no_results):
            blocks += 1  # the engine's "no results" notice: known, not a component
            continue
        holds = organic.under.get(item.mem_id, 0)
        claimed = _claims_itself(item, section, rules) if holds else None
        if holds == 1 and claimed is None:
            blocks += 1  # one organic result's block: the result is listed from organic.links
            continue
        if holds > 1 and claimed is None:
            blocks += _walk(item, section, root_index, rules, organic, position, found, errors)
            continue
        blocks += 1
        rule: Rule | None = claimed
        try:
            rule = rule or _classify(item, section, rules)
            found.extend(
                _Found(where, (root_index, position.get(item.mem_id, 0)), type_, url, title)
                for where, type_, url, title in _extract(item, section, rule, rules.base_url, bool(holds))
            )
        except Exception as exc:
            log.warning("%s component %d of %s failed to parse", rules.engine, index, section)
            errors.append(
                ComponentError(
                    section,
                    index,
                    rule.type if rule else UNKNOWN,
                    f"{type(exc).__name__}: {exc}",
                    traceback.format_exc(),
                )
            )
            found.append(_Found(section, (root_index, position.get(item.mem_id, 0)), UNKNOWN, "", ""))
    return blocks


def _claims_itself(item: LexborNode, section: Section, rules: EngineRules) -> Rule | None:
    """A rule whose selector matches the block itself (not only something inside it)."""
    for rule in rules.rules:
        if (not rule.within or section in rule.within) and _is(item, rule.match):
            return rule
    return None


def _classify(item: LexborNode, section: Section, rules: EngineRules) -> Rule | None:
    """The first rule that claims the item, or None (``unknown``)."""
    for rule in rules.rules:
        if (not rule.within or section in rule.within) and item.css_matches(rule.match):
            return rule
    return None


def _extract(
    item: LexborNode, section: Section, rule: Rule | None, base: str, wraps_results: bool = False
) -> list[tuple[Section, str, str, str]]:
    """(section, type, url, title) of the components in one block; a block that wraps
    organic results is one component of its rule's type (never split by ``each``)."""
    if rule is None:
        return [(section, UNKNOWN, _link(item, "a[href]", base), _title(item, _FALLBACK_TITLE))]
    nodes = _top_level(item.css(rule.each)) if rule.each and not wraps_results else []
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
